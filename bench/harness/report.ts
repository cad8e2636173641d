/** The pieces BENCHMARKS.md is assembled from: every number in it comes from a section's run. */
export interface Verdict {
  target: string;
  measured: string;
  met: boolean;
}

export interface SectionReport {
  id: string;
  title: string;
  /** Command that reproduces this section's figures. */
  command: string;
  /** Markdown body (tables and the notes that explain how they were measured). */
  body: string;
  verdicts: Verdict[];
  seconds: number;
}

export function table(head: string[], rows: Array<Array<string | number>>, align?: Array<"l" | "r">): string {
  const a = align ?? head.map((_, i) => (i === 0 ? "l" : "r"));
  const line = (cells: Array<string | number>) => `| ${cells.map((c) => String(c)).join(" | ")} |`;
  return [line(head), `|${a.map((x) => (x === "l" ? " :-- " : " --: ")).join("|")}|`, ...rows.map(line)].join("\n");
}

export const fmt = (x: number, digits = 1): string => (Number.isFinite(x) ? x.toFixed(digits) : "–");
export const pct = (x: number, digits = 0): string => (Number.isFinite(x) ? `${(x * 100).toFixed(digits)} %` : "–");
export const kib = (chars: number): string => `${(chars / 1024).toFixed(1)}`;
/** A count that should not vary between runs, as one number, or as "min–max" when it did. */
export function span(values: number[]): string {
  const lo = Math.min(...values);
  const hi = Math.max(...values);
  return lo === hi ? String(lo) : `${lo}–${hi}`;
}
export const yesNo = (b: boolean): string => (b ? "yes" : "**no**");
