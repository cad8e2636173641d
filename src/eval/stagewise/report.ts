import { markdownTable, pct as percent } from "../report-table.js";
import type { FixBreak, StagewiseSummary } from "./metrics.js";
import { REPLACEMENTS } from "./types.js";

/** ClinHallu prints fractions ×100 with one decimal; a missing value is "-". */
const pct = (x: number | null | undefined) => percent(x, 1, "-");
const signedPct = (x: number | null | undefined) => (x === null || x === undefined ? "-" : `${x >= 0 ? "+" : "-"}${Math.abs(x * 100).toFixed(1)}`);
const ratio = (x: number | null, n: number, d: number) => (x === null ? "-" : `${pct(x)} (${n}/${d})`);

interface Run {
  name: string;
  label: string;
  dataset: string;
  stagewise: StagewiseSummary;
}

function notes(runs: readonly Run[]): string[] {
  const out: string[] = [];
  for (const r of runs) {
    const s = r.stagewise;
    const absent = Object.entries(s.hFrom).filter(([, v]) => v === "none").map(([k]) => k.replace("h", "H_"));
    const parts = [`trace format ${s.format}`, `${s.baseline.total} of ${s.records} traces in Acc`];
    if (s.baseline.invalidTraces) parts.push(`${s.baseline.invalidTraces} invalid trace(s) excluded`);
    if (s.baseline.judgeFailures) parts.push(`${s.baseline.judgeFailures} answer-judge failure(s) excluded`);
    const stageFailures = Object.values(s.baseline.stages).reduce((a, c) => a + c.judgeFailures, 0) + Object.values(s.rep).reduce((a, x) => a + Object.values(x.stages).reduce((b, c) => b + c.judgeFailures, 0), 0);
    if (stageFailures) parts.push(`${stageFailures} stage-judge failure(s) counted hallucinated`);
    if (absent.length) parts.push(`${absent.join(", ")} "-": no replacement run to read it from (the baseline trace's own stage rates are in the next table)`);
    out.push(`- ${r.name}: ${parts.join("; ")}.`);
  }
  return out;
}

const fb = (x: FixBreak | undefined, which: "fix" | "break") => (x ? (which === "fix" ? ratio(x.fix, x.fixed, x.baseWrong) : ratio(x.break, x.broken, x.baseRight)) : "-");

/**
 * ClinHallu's Table 2 (accuracy with ΔV/ΔK/ΔVK) and Table 3 (H_V/H_K/H_R) with one row per
 * run, plus Fix/Break per setting (paper Eq. 15), in percent.
 */
export function stagewiseTables(runs: readonly Run[]): string {
  if (runs.length === 0) return "";
  const out: string[] = [];
  out.push("### Answer accuracy (ClinHallu Table 2)", "");
  out.push(
    markdownTable(
      ["run", "method", "dataset", "Acc", "ΔV", "ΔK", "ΔVK"],
      runs.map((r) => [r.name, r.label, r.dataset, pct(r.stagewise.acc), ...REPLACEMENTS.map((k) => signedPct(r.stagewise.rep[k]?.deltaAcc))]),
      ["l", "l", "l", "r", "r", "r", "r"],
    ),
    "",
  );
  out.push("### Stage hallucination (ClinHallu Table 3)", "");
  out.push(
    markdownTable(
      ["run", "method", "H_V", "H_K", "H_R"],
      runs.map((r) => [r.name, r.label, pct(r.stagewise.hV), pct(r.stagewise.hK), pct(r.stagewise.hR)]),
      ["l", "l", "r", "r", "r"],
    ),
    "",
  );
  out.push("### Stage hallucination on the baseline trace (ours)", "");
  out.push(
    markdownTable(
      ["run", "method", "visual", "knowledge", "reasoning"],
      runs.map((r) => [r.name, r.label, ...(["visual", "knowledge", "reasoning"] as const).map((st) => ratio(r.stagewise.baseline.stages[st].rate, r.stagewise.baseline.stages[st].hallucinated, r.stagewise.baseline.stages[st].total))]),
      ["l", "l", "r", "r", "r"],
    ),
    "",
    "Every stage of the model's own trace judged against the reference stage (or the case alone where the item has none). Not ClinHallu's H, which reads each stage from a replacement run; it is the figure a run without replacements (--replace none, --traces, --stage-judge) has.",
    "",
  );
  if (runs.some((r) => Object.keys(r.stagewise.rep).length > 0)) {
    out.push("### Fix and Break (paper Eq. 15)", "");
    out.push(
      markdownTable(
        ["run", ...REPLACEMENTS.flatMap((k) => [`Fix(${k})`, `Break(${k})`])],
        runs.map((r) => [r.name, ...REPLACEMENTS.flatMap((k) => [fb(r.stagewise.rep[k], "fix"), fb(r.stagewise.rep[k], "break")])]),
        ["l", "r", "r", "r", "r", "r", "r"],
      ),
      "",
      "Fix(s): share of baseline-wrong items the setting answers right; Break(s): share of baseline-right items it answers wrong (counts in brackets). An invalid trace counts as wrong on its side; an item whose answer judge failed on either side is left out.",
      "",
    );
  }
  out.push("Values are percentages; ΔAcc in percentage points, each accuracy over its own trace-valid, judge-valid items. H_V is judged on Rep-K's visual stage, H_K on Rep-V's knowledge stage, H_R on Rep-VK's reasoning stage.", "");
  out.push(...notes(runs), "");
  return out.join("\n");
}

/** The section summary.md gets for a run with a stage-wise part. */
export function stagewiseMarkdown(name: string, label: string, dataset: string, s: StagewiseSummary): string {
  return ["## Stage-wise diagnosis (ClinHallu)", "", stagewiseTables([{ name, label, dataset, stagewise: s }])].join("\n");
}
