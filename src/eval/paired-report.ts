import path from "node:path";
import { canonicalJson } from "../core/contracts/canonical-json.js";
import { readResults, RESULTS_FILE } from "./results-file.js";
import { ciText, markdownTable } from "./report-table.js";
import { holm, pairedComparison, type Outcome, type PairedComparison } from "./stats/index.js";
import type { EvalSummary } from "./summary.js";

/**
 * `eval report`'s paired comparison: every pair of runs on the items they share — the
 * accuracy difference with a paired bootstrap interval and McNemar's exact test — with
 * Holm's correction over the pairs when there are more than two runs.
 */

export interface PairedEntry {
  a: string;
  b: string;
  comparison: PairedComparison;
  /** McNemar's p after Holm's correction over all pairs (equal to p with one pair). */
  pHolm: number;
  /** What the two runs do not share: items, dataset or settings. */
  notes: string[];
}

export interface PairedReport {
  entries: PairedEntry[];
  correction: "Holm" | "none (one pair)";
}

/** A folder's records as outcomes: failed and abstained records count as wrong, as in accuracy. */
export async function loadOutcomes(dir: string): Promise<Outcome[]> {
  const { records } = await readResults(path.join(dir, RESULTS_FILE));
  return records.map((r) => ({ item: r.id, run: r.run, correct: r.correct === true }));
}

/** The settings two summaries differ in (dataset input, method, config keys, models, prompts). */
export function settingDifferences(a: EvalSummary, b: EvalSummary): string[] {
  const out: string[] = [];
  if (a.dataset.name !== b.dataset.name || a.dataset.input !== b.dataset.input) out.push(`dataset (${a.dataset.name}:${path.basename(a.dataset.input)} vs ${b.dataset.name}:${path.basename(b.dataset.input)})`);
  if (a.method !== b.method) out.push("method");
  const keys = [...new Set([...Object.keys(a.config), ...Object.keys(b.config)])].sort();
  const differing = keys.filter((k) => canonicalJson(a.config[k] ?? null) !== canonicalJson(b.config[k] ?? null));
  if (differing.length) out.push(`config ${differing.join(", ")}`);
  if (canonicalJson(a.models) !== canonicalJson(b.models)) out.push("models");
  if (canonicalJson(a.prompts) !== canonicalJson(b.prompts)) out.push("prompts");
  return out;
}

export function pairedReport(names: readonly string[], outcomes: readonly (readonly Outcome[])[], summaries: readonly EvalSummary[]): PairedReport {
  const raw: Array<Omit<PairedEntry, "pHolm">> = [];
  for (let i = 0; i < names.length; i++)
    for (let j = i + 1; j < names.length; j++) {
      const c = pairedComparison(outcomes[i]!, outcomes[j]!);
      const notes: string[] = [];
      if (c.sharedItems === 0) notes.push("no item in common: nothing to pair");
      else if (c.onlyA || c.onlyB) notes.push(`not the same items: ${c.onlyA} only in ${names[i]}, ${c.onlyB} only in ${names[j]}; compared on the ${c.sharedItems} shared`);
      const diff = settingDifferences(summaries[i]!, summaries[j]!);
      if (diff.length) notes.push(`settings differ: ${diff.join("; ")}`);
      raw.push({ a: names[i]!, b: names[j]!, comparison: c, notes });
    }
  const adjusted = holm(raw.map((e) => e.comparison.mcnemar.p));
  return { entries: raw.map((e, k) => ({ ...e, pHolm: adjusted[k]! })), correction: raw.length > 1 ? "Holm" : "none (one pair)" };
}

const pp = (x: number | null) => (x === null ? "—" : (x * 100).toFixed(1));
const pv = (p: number) => (p < 0.0001 ? "<0.0001" : p.toFixed(4));

export function pairedMarkdown(r: PairedReport): string {
  if (r.entries.length === 0) return "";
  const holmCol = r.entries.length > 1;
  const rows = r.entries.map((e) => {
    const c = e.comparison;
    const d = c.difference;
    return [
      `${e.a} − ${e.b}`,
      String(c.sharedItems),
      String(c.pairs),
      `${pp(c.accuracyA)} vs ${pp(c.accuracyB)}`,
      d ? `${d.value >= 0 ? "+" : ""}${(d.value * 100).toFixed(1)}` : "—",
      ciText(d?.ci),
      `${c.mcnemar.b} / ${c.mcnemar.c}`,
      pv(c.mcnemar.p),
      ...(holmCol ? [pv(e.pHolm)] : []),
    ];
  });
  const out = [
    "## Paired comparison",
    "",
    markdownTable(
      ["pair", "items", "pairs", "accuracy (%)", "difference (pp)", "95 % CI", "discordant A✓B✗ / A✗B✓", "McNemar p", ...(holmCol ? ["p (Holm)"] : [])],
      rows,
      ["l", "r", "r", "r", "r", "r", "r", "r", "r"],
    ),
    "",
    "Difference = accuracy of the first minus the second on the (item, run) pairs both have; its 95 % interval is a paired percentile bootstrap over items (an item's runs together; 2,000 resamples, seed 1). McNemar's exact test uses one pair per item (the first run both have), since runs of one item are not independent.",
  ];
  if (holmCol) out.push(`With ${r.entries.length} pairs the p-values are corrected for multiple comparisons by Holm's method (family-wise error 5 %).`);
  const notes = r.entries.filter((e) => e.notes.length);
  if (notes.length) out.push("", ...notes.map((e) => `- ${e.a} vs ${e.b}: ${e.notes.join("; ")}.`));
  return out.join("\n");
}
