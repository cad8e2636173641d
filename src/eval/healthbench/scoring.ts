import { percentileInterval, resampledStatistics } from "../stats/index.js";
import type { Interval } from "../stats/index.js";
import type { CriterionGrade, HealthBenchRecord, RubricItem } from "./types.js";

/**
 * HealthBench's scoring (openai/simple-evals, healthbench_eval.py), written from its
 * definitions: an example's score is the points of the criteria the grader found met —
 * negative criteria subtract — over the positive points available (null when there are
 * none); a rubric tag's score is the same over that tag's criteria only; an example tag
 * scores its example's overall score. A figure over examples is their mean clipped to
 * [0, 1] (an example's own score is not clipped), with a bootstrap over examples.
 */

export function rubricScore(items: ReadonlyArray<Pick<RubricItem, "points">>, met: readonly boolean[]): number | null {
  let possible = 0;
  let achieved = 0;
  items.forEach((it, i) => {
    if (it.points > 0) possible += it.points;
    if (met[i]) achieved += it.points;
  });
  return possible === 0 ? null : achieved / possible;
}

/** The score of one graded reply and of each of its rubric tags. */
export function scoreExample(grades: readonly CriterionGrade[]): Pick<HealthBenchRecord, "score" | "tagScores"> {
  const byTag = new Map<string, CriterionGrade[]>();
  for (const g of grades) for (const t of new Set(g.tags)) (byTag.get(t) ?? byTag.set(t, []).get(t)!).push(g);
  const tagScores: Record<string, number | null> = {};
  for (const [tag, gs] of [...byTag].sort(([a], [b]) => (a < b ? -1 : 1)))
    tagScores[tag] = rubricScore(
      gs,
      gs.map((g) => g.met),
    );
  return { score: rubricScore(grades, grades.map((g) => g.met)), tagScores };
}

export const clip01 = (x: number): number => Math.min(1, Math.max(0, x));

export interface ClippedMean {
  /** Mean of the examples' scores, clipped to [0, 1]; null without examples. */
  score: number | null;
  n: number;
  /** Percentile bootstrap 95 % interval of the clipped mean, over examples. */
  ci: Interval | null;
  /** The bootstrap's standard deviation of the clipped mean: the figure the reference prints beside it. */
  bootstrapStd: number | null;
}

/** The mean of example scores (each weighted by its count in a resample, 1 without counts), clipped to [0, 1]. */
function weightedClippedMean(values: readonly number[], counts: Uint32Array | null): number {
  let s = 0;
  let m = 0;
  for (let i = 0; i < values.length; i++) {
    const k = counts ? counts[i]! : 1;
    s += k * values[i]!;
    m += k;
  }
  return clip01(s / m);
}

/** The clipped mean of example scores alone, without its bootstrap: the point figure; null without examples. */
export function clippedMeanScore(values: readonly number[]): number | null {
  return values.length === 0 ? null : weightedClippedMean(values, null);
}

/** The clipped mean of example scores with its bootstrap (2,000 resamples, seed 1, like every other interval here). */
export function clippedMean(values: readonly number[]): ClippedMean {
  const n = values.length;
  if (n === 0) return { score: null, n: 0, ci: null, bootstrapStd: null };
  const [resampled] = resampledStatistics(n, (counts) => [weightedClippedMean(values, counts)], 1);
  const draws = resampled!.values;
  const avg = draws.reduce((a, b) => a + b, 0) / draws.length;
  const std = Math.sqrt(draws.reduce((a, b) => a + (b - avg) ** 2, 0) / draws.length);
  const ci = percentileInterval(resampled!, n, "bootstrap");
  return { score: clippedMeanScore(values), n, ci: ci ?? null, bootstrapStd: std };
}
