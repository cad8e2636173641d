import type { EvalSummary } from "./summary.js";
import type { Estimate, Interval } from "./stats/interval.js";

/** The Markdown building blocks every report section shares (eval report, studies, bench). */

/** A fraction as a percentage; a missing value is `missing` (ClinHallu's tables print "-"). */
export const pct = (x: number | null | undefined, d = 1, missing = "—") => (x === null || x === undefined ? missing : (x * 100).toFixed(d));

/** A 95 % interval as "[lo–hi]", in percent by default (scale 100) or in the value's own units (scale 1); "" without one. */
export function ciText(ci: Interval | null | undefined, d = 1, scale = 100): string {
  return ci ? `[${(ci.lo * scale).toFixed(d)}–${(ci.hi * scale).toFixed(d)}]` : "";
}

/** A value with its interval, e.g. "72.0 [63.1–79.4]". */
export function estimateText(e: Estimate | null | undefined, d = 1, scale = 100): string {
  if (!e) return "—";
  const ci = ciText(e.ci, d, scale);
  return `${(e.value * scale).toFixed(d)}${ci ? ` ${ci}` : ""}`;
}

/** A Markdown table with columns padded to equal width (readable raw in a terminal too). */
export function markdownTable(header: string[], rows: string[][], align: Array<"l" | "r"> = []): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length), 3));
  const pad = (s: string, i: number) => (align[i] === "r" ? s.padStart(widths[i]!) : s.padEnd(widths[i]!));
  const line = (cells: string[]) => `| ${cells.map((c, i) => pad(c, i)).join(" | ")} |`;
  const sep = `|${widths.map((w, i) => (align[i] === "r" ? `${"-".repeat(w + 1)}:` : `${"-".repeat(w + 2)}`)).join("|")}|`;
  return [line(header), sep, ...rows.map((r) => line(header.map((_, i) => r[i] ?? "")))].join("\n");
}

export interface Row {
  name: string;
  value: (s: EvalSummary) => number | null;
  format: (x: number, s: EvalSummary) => string;
  /** Digits of the delta; no delta when absent. */
  delta?: number;
}

/** An `eval report` row of a fraction shown as a percentage with one decimal. */
export function percentRow(name: string, f: (s: EvalSummary) => number | null | undefined): Row {
  return {
    name,
    value: (s) => {
      const v = f(s);
      return v === null || v === undefined ? null : v * 100;
    },
    format: (x) => x.toFixed(1),
    delta: 1,
  };
}
