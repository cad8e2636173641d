import { bootstrapCounts, type BootstrapOptions } from "./bootstrap.js";
import type { Estimate, Interval } from "./interval.js";
import { wilson } from "./proportion.js";
import { sortedWithClusters, type Scored } from "./scored.js";

/** Bins of the reliability diagram and of ECE, unless asked otherwise (fewer when there are fewer records). */
export const DEFAULT_BINS = 10;

export interface ReliabilityBin {
  /** Lowest and highest confidence in the bin. */
  lo: number;
  hi: number;
  n: number;
  meanConfidence: number;
  accuracy: number;
  ci: Interval | null;
}

export interface Calibration {
  n: number;
  bins: number;
  /** Expected calibration error over equal-mass bins: Σ (n_b / n)·|accuracy_b − mean confidence_b|. */
  ece: Estimate;
  /** Mean squared gap between confidence and outcome (1 right, 0 wrong). */
  brier: Estimate;
  reliability: ReliabilityBin[];
}

/**
 * Equal-mass bins: records sorted by confidence (ties in input order) and cut into B runs of
 * ⌊n/B⌋ or ⌈n/B⌉ records, B = min(bins, n). Equal mass, unlike equal-width bins, leaves no bin
 * empty or nearly so when confidences crowd near 1, which is where a pipeline's scores sit.
 */
export function equalMassBins(xs: readonly Scored[], bins = DEFAULT_BINS): Scored[][] {
  const sorted = [...xs].sort((a, b) => a.confidence - b.confidence);
  const n = sorted.length;
  const B = Math.min(bins, n);
  const out: Scored[][] = [];
  for (let j = 0; j < B; j++) out.push(sorted.slice(Math.floor((j * n) / B), Math.floor(((j + 1) * n) / B)));
  return out;
}

export function ece(xs: readonly Scored[], bins = DEFAULT_BINS): number {
  if (xs.length === 0) return NaN;
  let sum = 0;
  for (const bin of equalMassBins(xs, bins)) {
    let conf = 0;
    let right = 0;
    for (const x of bin) {
      conf += x.confidence;
      if (x.correct) right++;
    }
    sum += Math.abs(right - conf); // = n_b · |acc_b − conf_b|
  }
  return sum / xs.length;
}

export function brier(xs: readonly Scored[]): number {
  if (xs.length === 0) return NaN;
  let s = 0;
  for (const x of xs) s += (x.confidence - (x.correct ? 1 : 0)) ** 2;
  return s / xs.length;
}

export function reliabilityBins(xs: readonly Scored[], bins = DEFAULT_BINS): ReliabilityBin[] {
  return equalMassBins(xs, bins).map((bin) => {
    const right = bin.filter((x) => x.correct).length;
    return {
      lo: bin[0]!.confidence,
      hi: bin[bin.length - 1]!.confidence,
      n: bin.length,
      meanConfidence: bin.reduce((s, x) => s + x.confidence, 0) / bin.length,
      accuracy: right / bin.length,
      ci: wilson(right, bin.length),
    };
  });
}

/**
 * ECE and Brier of a bootstrap resample given as draws per cluster: `sorted` ascending by
 * confidence, each record standing for as many positions as its cluster was drawn, cut into
 * equal-mass bins by position — the same figures as ece() and brier() on the resample, in one
 * pass without sorting it.
 */
function weightedEceBrier(sorted: readonly Scored[], clusterOf: Int32Array, counts: Uint32Array, bins: number): [number, number] {
  let total = 0;
  for (let i = 0; i < sorted.length; i++) total += counts[clusterOf[i]!]!;
  if (total === 0) return [NaN, NaN];
  const B = Math.min(bins, total);
  let bin = 0;
  let end = Math.floor(total / B);
  let pos = 0;
  let conf = 0;
  let right = 0;
  let gaps = 0;
  let sq = 0;
  for (let i = 0; i < sorted.length; i++) {
    let left = counts[clusterOf[i]!]!;
    if (left === 0) continue;
    const x = sorted[i]!;
    const y = x.correct ? 1 : 0;
    sq += left * (x.confidence - y) ** 2;
    while (left > 0) {
      const take = Math.min(left, end - pos);
      conf += take * x.confidence;
      right += take * y;
      pos += take;
      left -= take;
      if (pos === end) {
        gaps += Math.abs(right - conf);
        conf = right = 0;
        bin++;
        end = Math.floor(((bin + 1) * total) / B);
      }
    }
  }
  return [gaps / total, sq / total];
}

/** ECE, Brier and the reliability diagram of records with a confidence; intervals bootstrapped over items (their runs together). Null for none. */
export function calibration(xs: readonly Scored[], o: BootstrapOptions & { bins?: number } = {}): Calibration | null {
  if (xs.length === 0) return null;
  const bins = o.bins ?? DEFAULT_BINS;
  const { sorted, clusterOf, clusters } = sortedWithClusters(xs, "asc");
  const [eceCi, brierCi] = bootstrapCounts(clusters, (counts) => weightedEceBrier(sorted, clusterOf, counts, bins), 2, o, clusters === xs.length ? "bootstrap" : "cluster-bootstrap");
  return {
    n: xs.length,
    bins: Math.min(bins, xs.length),
    ece: { value: ece(xs, bins), ci: eceCi! },
    brier: { value: brier(xs), ci: brierCi! },
    reliability: reliabilityBins(xs, bins),
  };
}
