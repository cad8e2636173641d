import type { ReliabilitySummary } from "../core/scoring/reliability.js";
import type { RobustnessSummary } from "./probes/robustness.js";
import type { AbstentionFigures, ConfidenceFigures } from "./record-stats.js";
import type { Estimate, Interval } from "./stats/interval.js";

/** The numbers of summary.json (computed in metrics.ts); apart, so that the summary and study types need not load the studies. */
export interface StratumCell {
  /** Item-runs (records): what the accuracy divides by. */
  n: number;
  /** Distinct items, and the runs they were answered in (absent in older summaries). */
  items?: number;
  runs?: number;
  correct: number;
  accuracy: number;
  /** 95 % interval (Wilson with one run, a bootstrap over items with several). */
  ci?: Interval | null;
}

/** One run's accuracy, and how many model calls it made and the response cache served. */
export interface RunCell {
  run: number;
  n: number;
  correct: number;
  accuracy: number;
  /** Wilson 95 % interval of this run's accuracy. */
  ci?: Interval | null;
  llmCalls?: number;
  cacheHits?: number;
  costUsd?: number;
}

export interface UsageTotals {
  llmCalls: number;
  searchCalls: number;
  promptTokens: number;
  completionTokens: number;
  costUsd: number;
  wallMs: number;
  /** Model calls without a price (costUsd leaves them out: reports say "unpriced"); absent when none. */
  unpricedCalls?: number;
  /** Model calls whose tokens were a tokenizer's estimate (their reply had no usage); absent when none. */
  estimatedCalls?: number;
}

export interface EvalMetrics {
  /** Distinct items (ids) with a record. */
  items: number;
  /** Distinct run indices with a record. */
  runs: number;
  /** (id, run) records. */
  records: number;
  /**
   * Mean over runs of each run's accuracy = correct / records of that run. Failed and
   * abstained records count as wrong: an answer the method did not give is not a point.
   */
  accuracy: number | null;
  /** Sample standard deviation (n − 1) of the per-run accuracies; null with fewer than 2 runs. */
  accuracyStd: number | null;
  /** 95 % interval of `accuracy`: Wilson with one run; with several, a percentile bootstrap over items (each item's runs resampled together). */
  accuracyCi?: Interval | null;
  accuracyByRun: RunCell[];
  /** Runs whose every answer came from the response cache (no model call at all). */
  runsFromCache?: number[];
  correct: number;
  failed: number;
  abstained: number;
  /** correct / records that did not fail, pooled over runs (how the method does when it runs at all). */
  accuracyExcludingFailed: number | null;
  accuracyExcludingFailedCi?: Interval | null;
  /** stratum key → value → accuracy pooled over runs (n counts records). */
  strata: Record<string, Record<string, StratumCell>>;
  /** MedMMV rollouts graded on their own answers, by the model each ran on (rollout-models.ts). */
  rolloutsByModel?: Record<string, RolloutModelCell>;
  /** Mean RGM and final-answer entropy over records that have rollouts/samples. */
  rgm: number | null;
  entropy: number | null;
  stabilityN: number;
  /** Means of the selected path's CU parts (MedMMV). */
  cu: { n: number; cu: number; evidence: number; coherence: number; repairPenalty: number; repairs: number } | null;
  answerSupport: number | null;
  /** Flagged claims by stage, summed over records; perItem divides by records. */
  hallucinations: {
    visual: number;
    knowledge: number;
    reasoning: number;
    total: number;
    resolved: number;
    perItem: { visual: number; knowledge: number; reasoning: number; total: number };
    /** Bootstrap 95 % intervals (over items) of the per-item rates. */
    perItemCi?: { visual: Interval | null; knowledge: Interval | null; reasoning: Interval | null; total: Interval | null };
  };
  /** Calibration and selective prediction of the method's confidence (answerSupport, or self-consistency's vote share); null without one. */
  confidence?: ConfidenceFigures | null;
  /** What the built-in abstention achieves: coverage and the accuracy of what was answered. */
  abstention?: AbstentionFigures;
  /** Total cost / correct answers (USD), with a bootstrap interval; null without prices or correct answers. */
  costPerCorrect?: Estimate | null;
  usage: { total: UsageTotals; perItem: UsageTotals };
  failures: { byCode: Record<string, number>; items: Array<{ id: string; run: number; code: string; message: string }> };
  /** Branch failures inside records that still finished (a rollout, a search), by code. */
  branchFailures: Record<string, number>;
  reliability: { raters: string[]; overall: ReliabilitySummary; byRater: Record<string, ReliabilitySummary>; ratingFailures: number } | null;
  /** Robustness probes (docs/evaluation.md#robustness-probes); null (or absent, in older summaries) without probes. */
  robustness?: RobustnessSummary | null;
}

/** How one model's rollouts did over a run: each rollout's own answer against the gold answer. */
export interface RolloutModelCell {
  /** Rollouts sampled on the model (failed ones included). */
  rollouts: number;
  /** Rollouts that gave an answer. */
  answered: number;
  correct: number;
  /** correct / rollouts; null without rollouts. */
  accuracy: number | null;
}
