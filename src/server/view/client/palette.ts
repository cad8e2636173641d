/** Colours and shapes that carry meaning in the graph and its legend (one place for both). */
export const AGENT_COLORS: Record<string, string> = {
  "text-doctor": "#2563eb",
  "image-doctor": "#d97706",
  "web-search": "#059669",
};
export const UNKNOWN_AGENT_COLOR = "#64748b";

export const RELATION_COLORS: Record<string, string> = {
  supports: "#16a34a",
  contradicts: "#dc2626",
  suggests: "#7c3aed",
  "associated-with": "#94a3b8",
  explains: "#0891b2",
  "located-in": "#a16207",
};
export const UNKNOWN_RELATION_COLOR = "#cbd5e1";

/** Shape names are sigma's SDF shapes declared in graph-view.ts; glyphs are for the legend. */
export const KIND_STYLE: Record<string, { shape: "circle" | "square" | "diamond"; size: number; glyph: string }> = {
  finding: { shape: "circle", size: 7, glyph: "\u25CF" },
  knowledge: { shape: "square", size: 8, glyph: "\u25A0" },
  hypothesis: { shape: "diamond", size: 10, glyph: "\u25C6" },
};
export const DEFAULT_KIND_STYLE = KIND_STYLE.finding!;

export const RETRACTED_OPACITY = 0.35;
/** Outside the selected path in path mode: present, but in the background. */
export const BACKGROUND_OPACITY = 0.25;
/** Not among a claim's evidence while a claim is highlighted. */
export const DIMMED_OPACITY = 0.12;
