import { MedmmvError } from "../contracts/errors.js";
import { neutraliseDelimiters } from "../contracts/prompt-fence.js";
import type { EvidenceEdge, EvidenceGraph, EvidenceNode } from "./evidence-graph.js";
import { normalizeLabel } from "./ids.js";
import type { NodeKind } from "../contracts/evidence.js";

/** Fence around web-search lines; prompts tell the model what it means (see prompts/). */
export const UNTRUSTED_OPEN = "<<<UNTRUSTED_SEARCH_CONTENT";
export const UNTRUSTED_CLOSE = ">>>";

export interface RenderEvidenceOptions {
  /** Most nodes listed (default 150). */
  maxNodes?: number;
  /** Hard cap on the returned string's length (default 16000). */
  maxChars?: number;
}

const KIND_RANK: Record<NodeKind, number> = { finding: 0, knowledge: 1, hypothesis: 2 };
const FIELD_CAP = { label: 300, detail: 400, quote: 300, title: 150, url: 300, flag: 200 } as const;

/** Untrusted text made unable to open or close the fence (the one neutraliser every fence uses). */
export const neutralizeDelimiters = neutraliseDelimiters;

/** One line per item: any newline in model or web text would let it forge a line of its own. */
function clean(text: string, cap: number): string {
  const flat = neutralizeDelimiters(text).replace(/[\p{Cc}\p{Zl}\p{Zp}\s]+/gu, " ").trim();
  const chars = Array.from(flat);
  return chars.length <= cap ? flat : chars.slice(0, cap - 3).join("") + "...";
}

function isUntrusted(n: Readonly<EvidenceNode>): boolean {
  return n.sources.some((s) => s.agent === "web-search");
}

function nodeLine(n: Readonly<EvidenceNode>): string {
  const parts = [`[${n.id}] (${n.kind}/${n.category}) ${clean(n.label, FIELD_CAP.label)}`];
  if (n.detail) parts.push(clean(n.detail, FIELD_CAP.detail));
  const quote = n.sources.find((s) => s.quote)?.quote;
  if (quote) parts.push(`quote: "${clean(quote, FIELD_CAP.quote)}"`);
  const image = n.sources.find((s) => s.imageId);
  if (image?.imageId) {
    parts.push(`image: ${clean(image.imageId, 64)}${image.region ? ` (${clean(image.region, 100)})` : ""}`);
  }
  const web = n.sources.find((s) => s.url);
  if (web?.url) {
    parts.push(`source: ${web.title ? `${clean(web.title, FIELD_CAP.title)} ` : ""}<${clean(web.url, FIELD_CAP.url)}>`);
  }
  parts.push(`from: ${[...new Set(n.sources.map((s) => s.agent))].sort().join(", ")}`);
  const flag = n.sources.find((s) => s.flagged)?.flagged;
  if (flag) parts.push(`flagged: ${clean(flag, FIELD_CAP.flag)}`);
  return parts.join(" | ");
}

function edgeLine(e: EvidenceEdge): string {
  return `[${e.from}] ${e.relation} [${e.to}] (${e.provenance.agent})`;
}

function sortNodes(nodes: ReadonlyArray<Readonly<EvidenceNode>>): Array<Readonly<EvidenceNode>> {
  return nodes
    .map((n) => ({ n, key: normalizeLabel(n.label) }))
    .sort((a, b) => {
      const rank = KIND_RANK[a.n.kind] - KIND_RANK[b.n.kind];
      if (rank !== 0) return rank;
      if (a.key !== b.key) return a.key < b.key ? -1 : 1;
      return a.n.id < b.n.id ? -1 : a.n.id > b.n.id ? 1 : 0;
    })
    .map((x) => x.n);
}

function intAtLeast(value: number | undefined, fallback: number, name: string, min: number): number {
  const v = value ?? fallback;
  if (!Number.isInteger(v) || v < min) throw new MedmmvError("INVALID_INPUT", `${name} must be an integer ≥ ${min}`);
  return v;
}

/**
 * The evidence graph as compact, deterministic text for a prompt: active nodes (findings,
 * then knowledge, then hypotheses; by label), web-search nodes fenced as untrusted, then the
 * relations among the listed nodes, then the counts. The case's own findings come first and
 * do not change when the web search adds its nodes and relations, so the graph a search
 * planner was sent is a prefix of the one the fact-checkers are sent. Over the limits, lower-priority lines are dropped and a
 * last line says how many nodes and edges were left out; the result never exceeds maxChars.
 */
export function renderEvidenceForPrompt(graph: EvidenceGraph, opts: RenderEvidenceOptions = {}): string {
  const maxNodes = intAtLeast(opts.maxNodes, 150, "maxNodes", 0);
  const maxChars = intAtLeast(opts.maxChars, 16_000, "maxChars", 1);

  const active = graph.readActiveNodes();
  const activeIds = new Set(active.map((n) => n.id));
  const activeEdges = graph.edges().filter((e) => activeIds.has(e.from) && activeIds.has(e.to));
  if (active.length === 0) return "Evidence graph: no active nodes.".slice(0, maxChars);

  const header = `Evidence graph: ${active.length} active nodes, ${activeEdges.length} relations.`;
  const sorted = sortNodes(active);
  // Case-derived findings outrank web knowledge when something has to go.
  const ordered = [...sorted.filter((n) => !isUntrusted(n)), ...sorted.filter(isUntrusted)];
  const candidates = ordered.slice(0, maxNodes).map((n) => ({ n, line: nodeLine(n), untrusted: isUntrusted(n) }));

  const fit = (reserve: number) => {
    let used = header.length;
    const trusted: string[] = [];
    const untrusted: string[] = [];
    const shown = new Set<string>();
    for (const c of candidates) {
      const cost = c.line.length + 1 + (c.untrusted && untrusted.length === 0 ? UNTRUSTED_OPEN.length + UNTRUSTED_CLOSE.length + 2 : 0);
      if (used + cost + reserve > maxChars) continue;
      used += cost;
      (c.untrusted ? untrusted : trusted).push(c.line);
      shown.add(c.n.id);
    }
    const relHeader = "Relations:";
    const edges: string[] = [];
    for (const e of activeEdges) {
      if (!shown.has(e.from) || !shown.has(e.to)) continue;
      const line = edgeLine(e);
      const cost = line.length + 1 + (edges.length === 0 ? relHeader.length + 1 : 0);
      if (used + cost + reserve > maxChars) continue;
      used += cost;
      edges.push(line);
    }
    const lines = [...trusted];
    if (untrusted.length > 0) lines.push(UNTRUSTED_OPEN, ...untrusted, UNTRUSTED_CLOSE);
    if (edges.length > 0) lines.push(relHeader, ...edges);
    // The counts close the text: at its head they would change with every node the web
    // search adds, and the graph sent before the search would no longer be a prefix of the
    // one sent after it (providers' prompt caches match prefixes).
    lines.push(header);
    return { lines, omittedNodes: active.length - shown.size, omittedEdges: activeEdges.length - edges.length };
  };

  const full = fit(0);
  if (full.omittedNodes === 0 && full.omittedEdges === 0) return full.lines.join("\n");
  const note = (nodes: number, edges: number) =>
    `[${nodes} of ${active.length} nodes and ${edges} of ${activeEdges.length} relations left out to fit the limit]`;
  const reserve = note(active.length, activeEdges.length).length + 1;
  const cut = fit(reserve);
  const text = [...cut.lines, note(cut.omittedNodes, cut.omittedEdges)].join("\n");
  // Only when maxChars cannot hold even the header and the note.
  return text.length <= maxChars ? text : text.slice(0, maxChars);
}
