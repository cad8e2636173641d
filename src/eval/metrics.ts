import { aggregateReliability, type ReliabilitySummary } from "../core/scoring/reliability.js";
import { UsageMeter } from "../core/llm/usage.js";
import type { ResultRecord } from "./results-file.js";
import type { EvalMetrics, UsageTotals } from "./metrics-types.js";
import { STUDIES } from "./studies.js";
import { abstentionFigures, confidenceFigures, costPerCorrect, meanIntervals, shareInterval } from "./record-stats.js";
import { wilson } from "./stats/proportion.js";
import type { Interval } from "./stats/interval.js";
import { rolloutsByModel } from "./rollout-models.js";

function rolloutModelsOf(records: readonly ResultRecord[]): Pick<EvalMetrics, "rolloutsByModel"> {
  const cells = rolloutsByModel(records);
  return Object.keys(cells).length ? { rolloutsByModel: cells } : {};
}

export type { EvalMetrics, StratumCell, UsageTotals } from "./metrics-types.js";

const mean = (xs: readonly number[]): number | null => (xs.length === 0 ? null : xs.reduce((a, b) => a + b, 0) / xs.length);

/** Sample standard deviation (Bessel-corrected); null for fewer than two values. */
export function sampleStd(xs: readonly number[]): number | null {
  if (xs.length < 2) return null;
  const m = mean(xs)!;
  return Math.sqrt(xs.reduce((s, x) => s + (x - m) ** 2, 0) / (xs.length - 1));
}

const FAILURE_LIST_MAX = 100;

/** Every number of summary.json, from the (deduplicated) records alone. */
export function computeMetrics(records: readonly ResultRecord[]): EvalMetrics {
  const byRun = new Map<number, { n: number; correct: number; llmCalls: number; cacheHits: number; costUsd: number }>();
  const strata: EvalMetrics["strata"] = {};
  const hall = { visual: 0, knowledge: 0, reasoning: 0, total: 0, resolved: 0 };
  const meter = new UsageMeter();
  // The meter rounds its cost and keeps no wall time: per-item means divide the raw sums.
  let costUsd = 0;
  let wallMs = 0;
  const failures: EvalMetrics["failures"] = { byCode: {}, items: [] };
  const branchFailures: Record<string, number> = {};
  const rgms: number[] = [];
  const entropies: number[] = [];
  const cus: NonNullable<ResultRecord["cu"]>[] = [];
  const supports: number[] = [];
  const ratings: NonNullable<ResultRecord["ratings"]> = [];
  let ratingFailures = 0;
  let correct = 0;
  let failed = 0;
  let abstained = 0;

  for (const r of records) {
    const run = byRun.get(r.run) ?? { n: 0, correct: 0, llmCalls: 0, cacheHits: 0, costUsd: 0 };
    run.n++;
    if (r.correct) run.correct++;
    run.llmCalls += r.usage?.llmCalls ?? 0;
    run.cacheHits += r.usage?.cacheHits ?? 0;
    run.costUsd += r.usage?.costUsd ?? 0;
    byRun.set(r.run, run);
    if (r.correct) correct++;
    if (r.status === "abstained") abstained++;
    if (r.status === "failed") {
      failed++;
      const code = r.error?.code ?? "UNKNOWN";
      failures.byCode[code] = (failures.byCode[code] ?? 0) + 1;
      if (failures.items.length < FAILURE_LIST_MAX) failures.items.push({ id: r.id, run: r.run, code, message: r.error?.message ?? "" });
    } else {
      for (const e of r.errors ?? []) branchFailures[e.code] = (branchFailures[e.code] ?? 0) + 1;
    }
    for (const [key, value] of Object.entries(r.strata ?? {})) {
      const cell = ((strata[key] ??= {})[value] ??= { n: 0, correct: 0, accuracy: 0 });
      cell.n++;
      if (r.correct) cell.correct++;
    }
    if (r.stability && r.status !== "failed") {
      rgms.push(r.stability.rgm);
      entropies.push(r.stability.entropy);
    }
    if (r.cu) cus.push(r.cu);
    if (r.answerSupport !== null && r.answerSupport !== undefined) supports.push(r.answerSupport);
    const h = r.hallucinations;
    if (h) {
      hall.visual += h.visual;
      hall.knowledge += h.knowledge;
      hall.reasoning += h.reasoning;
      hall.total += h.total;
      hall.resolved += h.resolved;
    }
    const u = r.usage;
    if (u) {
      // Records written before per-agent accounting carry no byAgent.
      meter.absorb({ ...u, byAgent: u.byAgent ?? {} });
      costUsd += u.costUsd;
      wallMs += u.wallMs;
    }
    ratings.push(...(r.ratings ?? []));
    ratingFailures += r.ratingErrors?.length ?? 0;
  }
  for (const [key, values] of Object.entries(strata))
    for (const [value, cell] of Object.entries(values)) {
      const inCell = records.filter((r) => r.strata?.[key] === value);
      cell.accuracy = cell.correct / cell.n;
      // n counts item-runs; items and runs say what they are made of.
      cell.items = new Set(inCell.map((r) => r.id)).size;
      cell.runs = new Set(inCell.map((r) => r.run)).size;
      cell.ci = shareInterval(inCell, (r) => r.correct);
    }

  const runs = [...byRun.entries()]
    .sort(([a], [b]) => a - b)
    .map(([run, v]) => ({ run, n: v.n, correct: v.correct, accuracy: v.correct / v.n, ci: wilson(v.correct, v.n), llmCalls: v.llmCalls, cacheHits: v.cacheHits, costUsd: Number(v.costUsd.toFixed(6)) }));
  const accs = runs.map((r) => r.accuracy);
  const n = records.length;
  const per = (x: number) => (n === 0 ? 0 : x / n);
  const answered = n - failed;
  const { llmCalls, searchCalls, promptTokens, completionTokens, unpricedCalls, estimatedCalls } = meter.snapshot(wallMs);
  const total: UsageTotals = { llmCalls, searchCalls, promptTokens, completionTokens, costUsd, wallMs, ...(unpricedCalls ? { unpricedCalls } : {}), ...(estimatedCalls ? { estimatedCalls } : {}) };

  let reliability: EvalMetrics["reliability"] = null;
  if (ratings.length > 0 || ratingFailures > 0) {
    const raters = [...new Set(ratings.map((r) => r.rater))].sort();
    const byRater: Record<string, ReliabilitySummary> = {};
    for (const name of raters) byRater[name] = aggregateReliability(ratings.filter((r) => r.rater === name));
    reliability = { raters, overall: aggregateReliability(ratings), byRater, ratingFailures };
  }

  return {
    items: new Set(records.map((r) => r.id)).size,
    runs: runs.length,
    records: n,
    accuracy: mean(accs),
    accuracyStd: sampleStd(accs),
    accuracyCi: shareInterval(records, (r) => r.correct),
    accuracyByRun: runs,
    runsFromCache: runs.filter((r) => r.llmCalls === 0 && r.cacheHits > 0).map((r) => r.run),
    correct,
    failed,
    abstained,
    accuracyExcludingFailed: answered === 0 ? null : records.filter((r) => r.status !== "failed" && r.correct).length / answered,
    accuracyExcludingFailedCi: shareInterval(
      records.filter((r) => r.status !== "failed"),
      (r) => r.correct,
    ),
    strata,
    // Only where rollouts recorded their models (MedMMV): other methods' summaries stay as they were.
    ...rolloutModelsOf(records),
    rgm: mean(rgms),
    entropy: mean(entropies),
    stabilityN: rgms.length,
    cu:
      cus.length === 0
        ? null
        : {
            n: cus.length,
            cu: mean(cus.map((c) => c.cu))!,
            evidence: mean(cus.map((c) => c.evidence))!,
            coherence: mean(cus.map((c) => c.coherence))!,
            repairPenalty: mean(cus.map((c) => c.repairPenalty))!,
            repairs: mean(cus.map((c) => c.repairs))!,
          },
    answerSupport: mean(supports),
    hallucinations: {
      ...hall,
      perItem: { visual: per(hall.visual), knowledge: per(hall.knowledge), reasoning: per(hall.reasoning), total: per(hall.total) },
      perItemCi: hallucinationIntervals(records),
    },
    confidence: confidenceFigures(records),
    abstention: abstentionFigures(records),
    costPerCorrect: costPerCorrect(records),
    usage: {
      total: { ...total, costUsd: Number(total.costUsd.toFixed(6)) },
      perItem: {
        llmCalls: per(total.llmCalls),
        searchCalls: per(total.searchCalls),
        promptTokens: per(total.promptTokens),
        completionTokens: per(total.completionTokens),
        costUsd: per(total.costUsd),
        wallMs: per(total.wallMs),
      },
    },
    failures,
    branchFailures,
    reliability,
    ...Object.assign({}, ...STUDIES.map((st) => st.metrics?.(records) ?? {})),
  };
}

/** The four stages' flagged claims per item, with their intervals from one set of resamples. */
function hallucinationIntervals(records: readonly ResultRecord[]): Record<"visual" | "knowledge" | "reasoning" | "total", Interval | null> {
  const stages = ["visual", "knowledge", "reasoning", "total"] as const;
  const cis = meanIntervals(
    records,
    stages.map((stage) => (r: ResultRecord) => r.hallucinations?.[stage] ?? 0),
  );
  return { visual: cis[0]!, knowledge: cis[1]!, reasoning: cis[2]!, total: cis[3]! };
}
