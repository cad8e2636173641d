import { markdownTable, pct, percentRow, type Row } from "../report-table.js";
import { type EvalSummary } from "../summary.js";
import type { PairedComparison } from "./paired.js";
import type { RobustnessSummary } from "./robustness.js";

/** summary.md's robustness section; empty for a run without probes. */
export function robustnessMarkdown(r: RobustnessSummary | null | undefined): string[] {
  if (!r) return [];
  const rows: string[][] = [
    ["probe", [r.hypothesis, r.shuffleOptions !== null ? `${r.shuffleOptions} option orders` : null].filter(Boolean).join(", ") || "—"],
    ["probed records", String(r.records)],
    ["accuracy under the probe (%)", pct(r.accuracy)],
  ];
  if (r.agreesWithHypothesis !== null) rows.push(["agrees with the hypothesis (%)", pct(r.agreesWithHypothesis)]);
  if (r.agreesWithWrong !== null) rows.push(["agrees with the wrong hypothesis (%)", pct(r.agreesWithWrong)]);
  for (const p of r.accuracyPerPermutation ?? []) rows.push([`  accuracy, order p${p.permutation} (%)`, `${pct(p.accuracy)} (n=${p.n})`]);
  if (r.shuffleOptions !== null) {
    rows.push(["consistency (%)", `${pct(r.consistency)} of ${r.permutationGroups} item-runs${r.incompleteGroups ? ` (${r.incompleteGroups} incomplete, left out)` : ""}`]);
    rows.push(["flip rate (%)", pct(r.flipRate)]);
  }
  return [
    "## Robustness",
    "",
    markdownTable(["metric", "value"], rows),
    "",
    "Consistency: the same option (by text) chosen in every order of an item; flip rate: the share of pairs of orders that chose differently. Failed and abstained records agree with nothing.",
    "",
  ];
}

/** `eval report` rows for probe runs (absent when no folder has probes). */
export function robustnessRows(summaries: readonly EvalSummary[]): Row[] {
  if (!summaries.some((s) => s.robustness)) return [];
  return [
    percentRow("agrees with wrong hypothesis (%)", (s) => s.robustness?.agreesWithWrong),
    percentRow("option-order consistency (%)", (s) => s.robustness?.consistency),
    percentRow("option-order flip rate (%)", (s) => s.robustness?.flipRate),
  ];
}

/** The paired table `eval report CLEAN PROBE…` prints under the comparison. */
export function pairedMarkdown(names: readonly string[], pairs: ReadonlyArray<PairedComparison | null>): string {
  const cols = names.map((n, i) => ({ n, p: pairs[i] ?? null })).filter((c) => c.p !== null);
  if (cols.length === 0) return "";
  const row = (label: string, f: (p: PairedComparison) => string) => [label, ...cols.map((c) => f(c.p!))];
  const body = [
    row("paired records", (p) => `${p.paired}${p.unpaired ? ` (+${p.unpaired} unpaired)` : ""}`),
    row("answers changed", (p) => `${p.changed} (${pct(p.paired ? p.changed / p.paired : null)}%)`),
    row("correct → wrong", (p) => String(p.correctToWrong)),
    row("wrong → correct", (p) => String(p.wrongToCorrect)),
  ];
  return [
    `## Against ${names[0]} (paired by item id and run)`,
    "",
    markdownTable(["", ...cols.map((c) => c.n)], body, ["l", ...cols.map(() => "r" as const)]),
    "",
    "A shuffled record pairs with its item's clean record; answers compare by option text, whatever letter it was shown under.",
  ].join("\n");
}
