import { bootstrapCounts, clusterBootstrap, type BootstrapOptions } from "./bootstrap.js";
import type { Estimate, Interval } from "./interval.js";
import { wilson } from "./proportion.js";
import { itemClusters, sortedWithClusters, type Scored } from "./scored.js";

/**
 * Selective prediction: act only on the records the system is most sure of. Records are
 * ranked by confidence, highest first; keeping the top k gives coverage k/n and risk (error
 * rate) errors(k)/k. Records with the same confidence cannot be told apart, so within a tie
 * the errors are spread evenly (the expectation over the tie's orders): the figures do not
 * depend on the order records happened to be read in.
 */

export interface RiskCoveragePoint {
  /** Keep records with confidence ≥ threshold. */
  threshold: number;
  coverage: number;
  risk: number;
  kept: number;
}

interface Group {
  confidence: number;
  n: number;
  errors: number;
}

/** Tie groups, highest confidence first. */
function groups(xs: readonly Scored[]): Group[] {
  const sorted = [...xs].sort((a, b) => b.confidence - a.confidence);
  const out: Group[] = [];
  for (const x of sorted) {
    const last = out[out.length - 1];
    if (last && last.confidence === x.confidence) {
      last.n++;
      if (!x.correct) last.errors++;
    } else out.push({ confidence: x.confidence, n: 1, errors: x.correct ? 0 : 1 });
  }
  return out;
}

/** Expected errors among the top k of every k = 1..n (ties spread evenly). */
function cumulativeErrors(gs: readonly Group[]): number[] {
  const out: number[] = [];
  let before = 0;
  for (const g of gs) {
    for (let j = 1; j <= g.n; j++) out.push(before + (g.errors * j) / g.n);
    before += g.errors;
  }
  return out;
}

/** The curve at every distinct threshold (one point per tie group). */
export function riskCoverage(xs: readonly Scored[]): RiskCoveragePoint[] {
  const n = xs.length;
  const out: RiskCoveragePoint[] = [];
  let kept = 0;
  let errors = 0;
  for (const g of groups(xs)) {
    kept += g.n;
    errors += g.errors;
    out.push({ threshold: g.confidence, coverage: kept / n, risk: errors / kept, kept });
  }
  return out;
}

/** Area under the risk–coverage curve: the mean over k = 1..n of the risk of the top k (Geifman et al. 2019). Lower is better. */
export function aurc(xs: readonly Scored[]): number {
  if (xs.length === 0) return NaN;
  const cum = cumulativeErrors(groups(xs));
  let s = 0;
  cum.forEach((e, i) => (s += e / (i + 1)));
  return s / xs.length;
}

/** The least AURC these outcomes allow: every right answer ranked above every wrong one. */
export function optimalAurc(n: number, errors: number): number {
  if (n === 0) return NaN;
  const right = n - errors;
  let s = 0;
  for (let k = right + 1; k <= n; k++) s += (k - right) / k;
  return s / n;
}

/** Accuracy of the top ⌈q·n⌉ records (at least one). */
export function accuracyAtCoverage(xs: readonly Scored[], q: number): number {
  if (xs.length === 0) return NaN;
  const k = Math.max(1, Math.ceil(q * xs.length - 1e-9));
  const cum = cumulativeErrors(groups(xs));
  return 1 - cum[k - 1]! / k;
}

export interface ThresholdChoice {
  /** Keep (act on) records with confidence ≥ threshold. */
  threshold: number;
  coverage: number;
  risk: number;
  kept: number;
  errors: number;
  /** Wilson interval of the risk among the kept records. */
  riskCi: Interval | null;
}

/** The lowest threshold (most coverage) whose kept records' error rate is at most `target`; null when none is. */
export function thresholdForRisk(xs: readonly Scored[], target: number): ThresholdChoice | null {
  let best: ThresholdChoice | null = null;
  let kept = 0;
  let errors = 0;
  const n = xs.length;
  for (const g of groups(xs)) {
    kept += g.n;
    errors += g.errors;
    if (errors / kept <= target) best = { threshold: g.confidence, coverage: kept / n, risk: errors / kept, kept, errors, riskCi: null };
  }
  if (best) best.riskCi = wilson(best.errors, best.kept);
  return best;
}

export interface SelectivePrediction {
  n: number;
  aurc: Estimate;
  /** AURC of the best possible ranking of these outcomes; AURC − this is the excess (E-AURC). */
  optimalAurc: number;
  excessAurc: number;
  /** Accuracy when acting on the most confident 50 / 80 / 90 % of records. */
  atCoverage: Array<{ coverage: number; accuracy: Estimate }>;
  curve: RiskCoveragePoint[];
}

export const COVERAGES = [0.5, 0.8, 0.9] as const;

/**
 * AURC and the accuracies at `coverages` of a bootstrap resample given as draws per cluster:
 * `sorted` descending by confidence with its tie groups as index ranges, each record standing
 * for as many records as its cluster was drawn — aurc() and accuracyAtCoverage() on the
 * resample, in one pass without sorting it.
 */
function weightedSelective(sorted: readonly Scored[], ties: ReadonlyArray<readonly [number, number]>, clusterOf: Int32Array, counts: Uint32Array, coverages: readonly number[]): number[] {
  let total = 0;
  for (let i = 0; i < sorted.length; i++) total += counts[clusterOf[i]!]!;
  if (total === 0) return [NaN, ...coverages.map(() => NaN)];
  const ks = coverages.map((q) => Math.max(1, Math.ceil(q * total - 1e-9)));
  const acc = coverages.map(() => NaN);
  let kept = 0;
  let before = 0;
  let area = 0;
  for (const [from, to] of ties) {
    let n = 0;
    let e = 0;
    for (let i = from; i < to; i++) {
      const w = counts[clusterOf[i]!]!;
      n += w;
      if (!sorted[i]!.correct) e += w;
    }
    if (n === 0) continue;
    for (let j = 1; j <= n; j++) area += (before + (e * j) / n) / (kept + j);
    ks.forEach((k, c) => {
      if (k > kept && k <= kept + n) acc[c] = 1 - (before + (e * (k - kept)) / n) / k;
    });
    kept += n;
    before += e;
  }
  return [area / total, ...acc];
}

/** The risk–coverage curve, AURC and accuracy at fixed coverages, intervals bootstrapped over items. Null for no records. */
export function selectivePrediction(xs: readonly Scored[], o: BootstrapOptions = {}): SelectivePrediction | null {
  if (xs.length === 0) return null;
  const { sorted, clusterOf, clusters } = sortedWithClusters(xs, "desc");
  const ties: Array<[number, number]> = [];
  sorted.forEach((x, i) => {
    const last = ties[ties.length - 1];
    if (last && sorted[last[0]]!.confidence === x.confidence) last[1] = i + 1;
    else ties.push([i, i + 1]);
  });
  const [aurcCi, ...accCis] = bootstrapCounts(clusters, (counts) => weightedSelective(sorted, ties, clusterOf, counts, COVERAGES), 1 + COVERAGES.length, o, clusters === xs.length ? "bootstrap" : "cluster-bootstrap");
  const errors = xs.filter((x) => !x.correct).length;
  const a = aurc(xs);
  const opt = optimalAurc(xs.length, errors);
  return {
    n: xs.length,
    aurc: { value: a, ci: aurcCi! },
    optimalAurc: opt,
    excessAurc: a - opt,
    atCoverage: COVERAGES.map((q, i) => ({ coverage: q, accuracy: { value: accuracyAtCoverage(xs, q), ci: accCis[i]! } })),
    curve: riskCoverage(xs),
  };
}

export interface ThresholdProposal extends ThresholdChoice {
  target: number;
  /** Percentile bootstrap of the chosen threshold over items (resamples where no threshold met the target are left out and counted). */
  thresholdCi: Interval | null;
  resamplesWithout: number;
}

/** thresholdForRisk with a bootstrap interval on the threshold itself: how much it would move on another draw of items. */
export function proposeThreshold(xs: readonly Scored[], target: number, o: BootstrapOptions = {}): ThresholdProposal | null {
  const best = thresholdForRisk(xs, target);
  if (!best) return null;
  let without = 0;
  const ci = clusterBootstrap(
    itemClusters(xs),
    (s) => {
      const t = thresholdForRisk(s, target);
      if (!t) without++;
      return t ? t.threshold : NaN;
    },
    o,
  );
  return { ...best, target, thresholdCi: ci, resamplesWithout: without };
}
