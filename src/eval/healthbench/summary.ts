import type { ResultRecord } from "../results-file.js";
import { clippedMean, clippedMeanScore, type ClippedMean } from "./scoring.js";
import { HEALTHBENCH_GOLD } from "./types.js";

/** summary.json `healthbench`: HealthBench's figures over the graded examples of a run. */
export interface HealthBenchSummary {
  /** Examples graded (records with every criterion decided). */
  graded: number;
  /** Examples not graded: the method or the grader failed; not in the score. */
  ungraded: number;
  /** The overall score: mean example score, clipped to [0, 1], with its bootstrap. */
  overall: ClippedMean;
  /** Per example tag `theme:…` (each example's overall score, over the examples with the tag). */
  themes: Record<string, ClippedMean>;
  /** Per rubric tag `axis:…` (each example's score over that axis's criteria, over the examples that have one with positive points). */
  axes: Record<string, ClippedMean>;
  /** Every other tag (`physician_agreed_category:…`, `level:…`, `cluster:…`) the same way. */
  otherTags: Record<string, ClippedMean>;
  /** Mean cost in USD of a graded example: the reply and its grading. */
  costPerExampleUsd: number | null;
}

/** The HealthBench records of a run, the graded ones, and the example scores every figure is a clipped mean of. */
interface ExampleScores {
  /** How many HealthBench records the run has, graded or not. */
  recordCount: number;
  graded: readonly ResultRecord[];
  overall: number[];
  /** Tag → the scores under it (an example tag: its examples' overall scores; a rubric tag: their scores over its criteria), tags sorted. */
  byTag: Array<[string, number[]]>;
}

function exampleScores(records: readonly ResultRecord[]): ExampleScores | null {
  const hb = records.filter((r) => r.healthbench !== undefined || r.gold.text === HEALTHBENCH_GOLD);
  if (hb.length === 0) return null;
  const graded = hb.filter((r) => r.status !== "failed" && r.healthbench && r.healthbench.score !== null);
  const byTag = new Map<string, number[]>();
  const push = (tag: string, v: number) => (byTag.get(tag) ?? byTag.set(tag, []).get(tag)!).push(v);
  for (const r of graded) {
    const h = r.healthbench!;
    for (const t of new Set(h.exampleTags)) push(t, h.score!);
    for (const [t, v] of Object.entries(h.tagScores)) if (v !== null) push(t, v);
  }
  return { recordCount: hb.length, graded, overall: graded.map((r) => r.healthbench!.score!), byTag: [...byTag].sort(([a], [b]) => (a < b ? -1 : 1)) };
}

/** HealthBench's figures from a run's records; null without HealthBench records. */
export function computeHealthBench(records: readonly ResultRecord[]): HealthBenchSummary | null {
  const x = exampleScores(records);
  if (!x) return null;
  const themes: HealthBenchSummary["themes"] = {};
  const axes: HealthBenchSummary["axes"] = {};
  const otherTags: HealthBenchSummary["otherTags"] = {};
  for (const [tag, values] of x.byTag) {
    const m = clippedMean(values);
    if (tag.startsWith("theme:")) themes[tag.slice("theme:".length)] = m;
    else if (tag.startsWith("axis:")) axes[tag.slice("axis:".length)] = m;
    else otherTags[tag] = m;
  }
  const { graded } = x;
  return {
    graded: graded.length,
    ungraded: x.recordCount - graded.length,
    overall: clippedMean(x.overall),
    themes,
    axes,
    otherTags,
    costPerExampleUsd: graded.length ? graded.reduce((s, r) => s + r.usage.costUsd, 0) / graded.length : null,
  };
}

/**
 * The overall and per-axis scores alone, without their bootstraps: what a paired bootstrap
 * recomputes on each of its resamples. (Through computeHealthBench every resample ran a
 * bootstrap of its own per tag: resamples × tags × resamples, minutes for a few hundred examples.)
 */
export function healthbenchScores(records: readonly ResultRecord[]): { overall: number | null; axes: Record<string, number | null> } | null {
  const x = exampleScores(records);
  if (!x) return null;
  const axes: Record<string, number | null> = {};
  for (const [tag, values] of x.byTag) if (tag.startsWith("axis:")) axes[tag.slice("axis:".length)] = clippedMeanScore(values);
  return { overall: clippedMeanScore(x.overall), axes };
}
