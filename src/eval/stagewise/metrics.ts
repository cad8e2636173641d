import type { ResultRecord } from "../results-file.js";
import { REPLACEMENTS, type JudgedTrace, type ReplacementKey, type StageJudgments, type StageKey, type TraceFormat } from "./types.js";

/** ClinHallu's Acc: correct / trace-valid, judge-valid traces. */
export interface AccCell {
  acc: number | null;
  correct: number;
  /** Traces that are valid and whose answer judge did not fail: the denominator. */
  total: number;
  invalidTraces: number;
  judgeFailures: number;
}

export interface RateCell {
  rate: number | null;
  hallucinated: number;
  /** Records that hold the stage (ClinHallu: every record containing the step, valid or not). */
  total: number;
  judgeFailures: number;
}

/**
 * Fix and Break (paper Eq. 15). Our rule for what ClinHallu leaves open: an item counts on
 * a side as incorrect (0) when that side's trace is invalid (no usable answer), as its
 * judge's verdict otherwise; an item whose answer judge failed (-1) on either side, or that
 * has no run of this setting, is left out of both.
 */
export interface FixBreak {
  fix: number | null;
  break: number | null;
  fixed: number;
  /** Items wrong at baseline (Fix's denominator). */
  baseWrong: number;
  broken: number;
  /** Items right at baseline (Break's denominator). */
  baseRight: number;
  excluded: number;
}

export interface ReplacementSummary extends AccCell, FixBreak {
  deltaAcc: number | null;
  /** Hallucination rate of each stage ClinHallu judges under this setting. */
  stages: Partial<Record<StageKey, RateCell>>;
}

/** summary.json → `stagewise` (docs/evaluation.md#stage-wise-hallucination-diagnosis-clinhallu). Fractions in [0, 1]; records pooled over runs. */
export interface StagewiseSummary {
  /** Which trace format produced these numbers (structured output, ClinHallu's text protocol, --traces, a method's path). */
  format: TraceFormat | "mixed";
  records: number;
  acc: number | null;
  baseline: AccCell & { stages: Record<StageKey, RateCell> };
  /** ClinHallu's H: null ("-" in its tables) when the replacement run it is read from is absent; `baseline.stages` has the baseline trace's own rates. */
  hV: number | null;
  hK: number | null;
  hR: number | null;
  /** Which replacement run each H was read from, or "none" when that run is absent. */
  hFrom: { hV: "rep-K" | "none"; hK: "rep-V" | "none"; hR: "rep-VK" | "none" };
  rep: Partial<Record<ReplacementKey, ReplacementSummary>>;
}

function accCell(traces: readonly JudgedTrace[]): AccCell {
  let correct = 0;
  let total = 0;
  let invalidTraces = 0;
  let judgeFailures = 0;
  for (const t of traces) {
    if (!t.valid) invalidTraces++;
    else if (t.answerCorrect === -1) judgeFailures++;
    else if (t.answerCorrect !== null) {
      total++;
      if (t.answerCorrect === 1) correct++;
    }
  }
  return { acc: total ? correct / total : null, correct, total, invalidTraces, judgeFailures };
}

function rateCell(judged: readonly StageJudgments[], stage: StageKey): RateCell {
  let hallucinated = 0;
  let total = 0;
  let judgeFailures = 0;
  for (const j of judged) {
    const v = j[stage];
    if (!v) continue;
    total++;
    hallucinated += v.hallucinated;
    if (v.by === "judge-failed") judgeFailures++;
  }
  return { rate: total ? hallucinated / total : null, hallucinated, total, judgeFailures };
}

/** An item's correctness on one side for Fix/Break: 0 for an invalid trace, null when not decided. */
function side(t: JudgedTrace | undefined): 0 | 1 | null {
  if (!t) return null;
  if (!t.valid) return 0;
  return t.answerCorrect === 0 || t.answerCorrect === 1 ? t.answerCorrect : null;
}

export function fixBreak(pairs: ReadonlyArray<{ base: JudgedTrace; rep: JudgedTrace | undefined }>): FixBreak {
  const fb = { fixed: 0, baseWrong: 0, broken: 0, baseRight: 0, excluded: 0 };
  for (const p of pairs) {
    const c = side(p.base);
    const cs = side(p.rep);
    if (c === null || cs === null) {
      fb.excluded++;
      continue;
    }
    if (c === 0) {
      fb.baseWrong++;
      if (cs === 1) fb.fixed++;
    } else {
      fb.baseRight++;
      if (cs === 0) fb.broken++;
    }
  }
  return { ...fb, fix: fb.baseWrong ? fb.fixed / fb.baseWrong : null, break: fb.baseRight ? fb.broken / fb.baseRight : null };
}

/**
 * ClinHallu's numbers from the records that carry a stage-wise part: Acc over
 * trace-valid, judge-valid baseline traces; H_V from Rep-K's visual stage, H_K from Rep-V's
 * knowledge stage, H_R from Rep-VK's reasoning stage, each over every record holding that
 * stage (a trace whose generation failed for good holds every stage, empty and so
 * hallucinated), and absent without that replacement run, as in ClinHallu's tables; ΔAcc = Acc(setting) − Acc(baseline), each on its own subset; Fix/Break
 * as above. Failed records (a call that failed for good, or a run stopped mid-item) are
 * not in these numbers, even with some phases done: they are in `failed`. Null when no record has a stage-wise part.
 */
export function computeStagewise(records: readonly ResultRecord[]): StagewiseSummary | null {
  const rows = records.flatMap((r) => (r.status !== "failed" && r.stagewise?.trace ? [r.stagewise] : []));
  if (rows.length === 0) return null;
  const formats = new Set(rows.map((r) => r.format));
  const base = accCell(rows.map((r) => r.trace!));
  const baseStages = { visual: rateCell(rows.map((r) => r.judged), "visual"), knowledge: rateCell(rows.map((r) => r.judged), "knowledge"), reasoning: rateCell(rows.map((r) => r.judged), "reasoning") };
  const rep: StagewiseSummary["rep"] = {};
  for (const s of REPLACEMENTS) {
    const runs = rows.flatMap((r) => (r.replacements[s] ? [r.replacements[s]!] : []));
    if (runs.length === 0) continue;
    const a = accCell(runs.map((x) => x.trace));
    const stages: ReplacementSummary["stages"] = {};
    for (const st of ["visual", "knowledge", "reasoning"] as const) {
      const cell = rateCell(runs.map((x) => x.judged), st);
      if (cell.total > 0) stages[st] = cell;
    }
    rep[s] = {
      ...a,
      deltaAcc: a.acc !== null && base.acc !== null ? a.acc - base.acc : null,
      ...fixBreak(rows.map((r) => ({ base: r.trace!, rep: r.replacements[s]?.trace }))),
      stages,
    };
  }
  const pick = (s: ReplacementKey, stage: StageKey) => rep[s]?.stages[stage]?.rate;
  const hV = pick("K", "visual");
  const hK = pick("V", "knowledge");
  const hR = pick("VK", "reasoning");
  return {
    format: formats.size === 1 ? [...formats][0]! : "mixed",
    records: rows.length,
    acc: base.acc,
    baseline: { ...base, stages: baseStages },
    hV: hV ?? null,
    hK: hK ?? null,
    hR: hR ?? null,
    hFrom: { hV: hV !== undefined ? "rep-K" : "none", hK: hK !== undefined ? "rep-V" : "none", hR: hR !== undefined ? "rep-VK" : "none" },
    rep,
  };
}
