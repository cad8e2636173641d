import type { ResultRecord } from "./results-file.js";
import {
  bootstrapCounts,
  DEFAULT_RESAMPLES,
  DEFAULT_SEED,
  LEVEL,
  calibration,
  clustersBy,
  selectivePrediction,
  wilson,
  type Calibration,
  type Estimate,
  type Interval,
  type Scored,
  type SelectivePrediction,
} from "./stats/index.js";

/**
 * The summary's uncertainty, calibration and selective-prediction figures, from the records:
 * the bridge between results.jsonl and the statistics module (docs/evaluation.md#statistics).
 */

/** A record's (item's) cluster: its runs are resampled together, so R runs of one item do not pass for R independent items. */
export const byItem = <T extends { id: string }>(records: readonly T[]): T[][] => clustersBy(records, (r) => r.id);

/**
 * Bootstrap 95 % interval over items of Σ num / Σ den (a share, a mean, a cost per correct
 * answer): each item's sums are taken once, so a resample costs one pass over the items.
 */
export function ratioInterval<T extends { id: string }>(records: readonly T[], num: (r: T) => number, den: (r: T) => number): Interval | null {
  return ratioIntervals(records, [{ num, den }])[0]!;
}

/**
 * ratioInterval of several figures of the same records from one set of resamples. Every
 * bootstrap here draws from the same seed, so each figure's interval is exactly the one its
 * own ratioInterval gives; the resamples (resamples × items draws, the bulk of the work at the
 * end of a large eval) are drawn once instead of once per figure. A figure that is zero for
 * every item (no flagged claim in a method that flags none) is zero in every resample: its
 * interval is [0, 0] without resampling.
 */
export function ratioIntervals<T extends { id: string }>(records: readonly T[], figures: ReadonlyArray<{ num: (r: T) => number; den: (r: T) => number }>): Array<Interval | null> {
  const clusters = byItem(records);
  const method = clusters.length === records.length ? "bootstrap" : "cluster-bootstrap";
  const sums = figures.map(({ num, den }) => ({
    a: clusters.map((c) => c.reduce((s, r) => s + num(r), 0)),
    b: clusters.map((c) => c.reduce((s, r) => s + den(r), 0)),
  }));
  const constantZero = (f: { a: number[]; b: number[] }) => f.a.length > 0 && f.a.every((x) => x === 0) && f.b.every((y) => y > 0);
  const resampled = sums.filter((f) => !constantZero(f));
  const intervals = resampled.length === 0
    ? []
    : bootstrapCounts(
        clusters.length,
        (counts) =>
          resampled.map(({ a, b }) => {
            let x = 0;
            let y = 0;
            for (let i = 0; i < counts.length; i++) {
              x += counts[i]! * a[i]!;
              y += counts[i]! * b[i]!;
            }
            return y === 0 ? NaN : x / y;
          }),
        resampled.length,
        {},
        method,
      );
  let next = 0;
  return sums.map((f) => (constantZero(f) ? zeroInterval(clusters.length, method) : intervals[next++]!));
}

/** What the percentile bootstrap gives a figure that is 0 in every resample. */
function zeroInterval(n: number, method: Interval["method"]): Interval {
  return { lo: 0, hi: 0, level: LEVEL, method, n, resamples: DEFAULT_RESAMPLES, seed: DEFAULT_SEED };
}

/**
 * 95 % interval of the share of `records` that satisfy `hit`: Wilson when every item has one
 * record (one run), otherwise a percentile bootstrap over items (all their runs together).
 */
export function shareInterval<T extends { id: string }>(records: readonly T[], hit: (r: T) => boolean): Interval | null {
  if (records.length === 0) return null;
  const clusters = byItem(records);
  if (clusters.length === records.length) return wilson(records.filter(hit).length, records.length);
  return ratioInterval(records, (r) => (hit(r) ? 1 : 0), () => 1);
}

/** 95 % bootstrap interval (over items) of the mean of a per-record number. */
export function meanInterval<T extends { id: string }>(records: readonly T[], value: (r: T) => number): Interval | null {
  return meanIntervals(records, [value])[0]!;
}

/** meanInterval of several per-record numbers, from one set of resamples (ratioIntervals). */
export function meanIntervals<T extends { id: string }>(records: readonly T[], values: ReadonlyArray<(r: T) => number>): Array<Interval | null> {
  if (records.length === 0) return values.map(() => null);
  return ratioIntervals(
    records,
    values.map((num) => ({ num, den: () => 1 })),
  );
}

/** What the method's own confidence is: MedMMV's answer support, or self-consistency's vote share (which it records as answerSupport). */
export function confidenceName(method: string): string {
  return method === "self-consistency" ? "vote share" : "answerSupport";
}

export interface ConfidenceFigures {
  /** Which score was ranked: answerSupport, or self-consistency's vote share. */
  source: string;
  /** Records (not failed) that carry the score. */
  n: number;
  /** Of those, abstained ones (scored as wrong); abstained records without a score are left out. */
  abstainedScored?: number;
  calibration: Calibration;
  selective: SelectivePrediction;
}

/** The records calibration and selective prediction rank: those that did not fail and carry a confidence. Abstained ones with a confidence count as wrong, as in accuracy; those without one cannot be ranked and are left out. */
export function scoredRecords(records: readonly ResultRecord[]): Scored[] {
  return records
    .filter((r) => r.status !== "failed" && typeof r.answerSupport === "number" && Number.isFinite(r.answerSupport))
    .map((r) => ({ confidence: r.answerSupport!, correct: r.correct, item: r.id }));
}

export function confidenceFigures(records: readonly ResultRecord[]): ConfidenceFigures | null {
  const xs = scoredRecords(records);
  const cal = calibration(xs);
  const sel = selectivePrediction(xs);
  if (!cal || !sel) return null;
  const abstainedScored = records.filter((r) => r.status === "abstained" && typeof r.answerSupport === "number" && Number.isFinite(r.answerSupport)).length;
  return { source: confidenceName(records[0]?.method ?? ""), n: xs.length, abstainedScored, calibration: cal, selective: sel };
}

export interface AbstentionFigures {
  /** Records that did not fail: the method either answered or abstained. */
  records: number;
  answered: number;
  /** Answered / records, and accuracy among the answered: what the built-in abstention achieves. */
  coverage: Estimate | null;
  accuracyAnswered: Estimate | null;
}

export function abstentionFigures(records: readonly ResultRecord[]): AbstentionFigures {
  const ran = records.filter((r) => r.status !== "failed");
  const answered = ran.filter((r) => r.status === "completed");
  const est = <T extends { id: string }>(xs: readonly T[], hit: (r: T) => boolean): Estimate | null =>
    xs.length === 0 ? null : { value: xs.filter(hit).length / xs.length, ci: shareInterval(xs, hit) };
  return {
    records: ran.length,
    answered: answered.length,
    coverage: est(ran, (r) => r.status === "completed"),
    accuracyAnswered: est(answered, (r) => r.correct),
  };
}

/** Cost per correct answer: total cost / correct, bootstrapped over items (null without a correct answer or a price). */
export function costPerCorrect(records: readonly ResultRecord[]): Estimate | null {
  const cost = (r: ResultRecord) => r.usage?.costUsd ?? 0;
  const right = records.filter((r) => r.correct).length;
  const value = right === 0 ? NaN : records.reduce((c, r) => c + cost(r), 0) / right;
  if (!Number.isFinite(value) || value === 0) return null;
  return { value, ci: ratioInterval(records, cost, (r) => (r.correct ? 1 : 0)) };
}
