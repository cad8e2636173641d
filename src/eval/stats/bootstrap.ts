import { LEVEL, type Interval } from "./interval.js";
import { seededRandom } from "../../core/seeded-random.js";

/** Resamples of every bootstrap unless a caller asks for more (≥ 2,000 keeps the 2.5 % tails stable to about ±0.5 pp). */
export const DEFAULT_RESAMPLES = 2000;
export const DEFAULT_SEED = 1;

export interface BootstrapOptions {
  resamples?: number;
  seed?: number;
}

/** The q-quantile of sorted values, linearly interpolated (R's type 7, numpy's default). */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const h = (sorted.length - 1) * q;
  const lo = Math.floor(h);
  const hi = Math.ceil(h);
  return sorted[lo]! + (h - lo) * (sorted[hi]! - sorted[lo]!);
}

/**
 * Percentile bootstrap over clusters: each resample draws clusters with replacement (all of a
 * cluster's observations together) and recomputes the statistic on them. With one observation
 * per cluster it is the ordinary bootstrap; with an item's R runs as its cluster, the interval
 * accounts for both the items and the runs (runs of one item are not independent draws of the
 * benchmark). Resamples whose statistic is not finite (e.g. no confident item drawn) are
 * dropped; the interval is null if none is left or there are no clusters.
 */
export function clusterBootstrap<T>(clusters: readonly (readonly T[])[], stat: (sample: T[]) => number, o: BootstrapOptions = {}): Interval | null {
  return clusterBootstrapMany(clusters, (s) => [stat(s)], 1, o)[0]!;
}

/**
 * The resampling loop itself: each resample draws m clusters with replacement, seen as how
 * many times each cluster was drawn, and `stat` turns those counts into k statistics. A
 * statistic that can use the counts directly (calibration, selective prediction walk their
 * records once, in an order sorted beforehand) needs no per-resample sort or copy.
 */
export function bootstrapCounts(m: number, stat: (counts: Uint32Array) => ReadonlyArray<number | null | undefined>, k: number, o: BootstrapOptions = {}, method: Interval["method"] = "cluster-bootstrap"): Array<Interval | null> {
  return resampledStatistics(m, stat, k, o).map((r) => percentileInterval(r, m, method));
}

/** The finite values of each of k statistics over the resamples, sorted, with the resamples and seed that drew them. */
export interface Resampled {
  values: number[];
  resamples: number;
  seed: number;
}

/** The resampling loop of every bootstrap here: `stat` of each resample's cluster counts, kept where finite. */
export function resampledStatistics(m: number, stat: (counts: Uint32Array) => ReadonlyArray<number | null | undefined>, k: number, o: BootstrapOptions = {}): Resampled[] {
  const resamples = o.resamples ?? DEFAULT_RESAMPLES;
  const seed = o.seed ?? DEFAULT_SEED;
  const values: number[][] = Array.from({ length: k }, () => []);
  if (m > 0) {
    const rand = seededRandom(seed);
    const counts = new Uint32Array(m);
    for (let b = 0; b < resamples; b++) {
      counts.fill(0);
      for (let i = 0; i < m; i++) counts[Math.floor(rand() * m)]!++;
      const v = stat(counts);
      for (let j = 0; j < k; j++) {
        const x = v[j];
        if (typeof x === "number" && Number.isFinite(x)) values[j]!.push(x);
      }
    }
  }
  return values.map((vs) => ({ values: vs.sort((a, b) => a - b), resamples, seed }));
}

/** The 95 % percentile interval of resampled values; null when there are none. */
export function percentileInterval(r: Resampled, n: number, method: Interval["method"]): Interval | null {
  if (r.values.length === 0) return null;
  const alpha = (1 - LEVEL) / 2;
  return { lo: quantile(r.values, alpha), hi: quantile(r.values, 1 - alpha), level: LEVEL, method, n, resamples: r.resamples, seed: r.seed };
}

/**
 * clusterBootstrap of k statistics at once, from the same resamples (one pass of an expensive
 * summary per resample rather than k): one interval (or null) per statistic. A resample lists
 * the drawn clusters' observations cluster by cluster, in the clusters' order.
 */
export function clusterBootstrapMany<T>(
  clusters: readonly (readonly T[])[],
  stat: (sample: T[]) => ReadonlyArray<number | null | undefined>,
  k: number,
  o: BootstrapOptions & {
    /** Give the d-th drawn copy of a cluster an identity of its own, for statistics that group by an id (a cluster drawn twice is two items, not one). */
    relabel?: (x: T, draw: number) => T;
  } = {},
): Array<Interval | null> {
  const sample: T[] = [];
  const method = clusters.every((c) => c.length === 1) ? "bootstrap" : "cluster-bootstrap";
  return bootstrapCounts(
    clusters.length,
    (counts) => {
      sample.length = 0;
      let draw = 0;
      counts.forEach((times, c) => {
        for (let t = 0; t < times; t++, draw++) for (const x of clusters[c]!) sample.push(o.relabel ? o.relabel(x, draw) : x);
      });
      return stat(sample);
    },
    k,
    o,
    method,
  );
}

/** Percentile bootstrap of a statistic of independent observations. */
export function bootstrap<T>(xs: readonly T[], stat: (sample: T[]) => number, o: BootstrapOptions = {}): Interval | null {
  return clusterBootstrap(
    xs.map((x) => [x]),
    stat,
    o,
  );
}

/** Percentile bootstrap of a mean. */
export function bootstrapMean(xs: readonly number[], o: BootstrapOptions = {}): Interval | null {
  return bootstrap(xs, mean, o);
}

export function mean(xs: readonly number[]): number {
  let s = 0;
  for (const x of xs) s += x;
  return xs.length === 0 ? NaN : s / xs.length;
}

/** Group observations by a key (an item id), in order of first appearance: the clusters of a cluster bootstrap. */
export function clustersBy<T>(xs: readonly T[], key: (x: T, i: number) => string): T[][] {
  const by = new Map<string, T[]>();
  for (const [i, x] of xs.entries()) {
    const k = key(x, i);
    const c = by.get(k);
    if (c) c.push(x);
    else by.set(k, [x]);
  }
  return [...by.values()];
}
