import { percentileInterval, resampledStatistics, type BootstrapOptions } from "./bootstrap.js";
import type { Interval } from "./interval.js";

export interface PairedBootstrap {
  /** The 95 % percentile interval of the difference; null when no resample gave a finite one. */
  ci: Interval | null;
  /**
   * Two-sided bootstrap p of "no difference": twice the smaller share of resampled differences
   * on either side of 0 (ties with 0 count on both sides), capped at 1.
   */
  p: number | null;
}

/**
 * Paired percentile bootstrap of k differences at once: every resample draws m clusters (items,
 * each holding both runs' records) with replacement and `diff` computes the k differences
 * (A − B) on the drawn clusters, so what the two runs share — the items — is resampled
 * together and their difficulty cancels. Resamples where a difference is not finite are
 * dropped for that difference.
 */
export function pairedBootstrapMany(m: number, diff: (counts: Uint32Array) => ReadonlyArray<number | null | undefined>, k: number, o: BootstrapOptions = {}): PairedBootstrap[] {
  return resampledStatistics(m, diff, k, o).map((r) => {
    const vs = r.values;
    if (vs.length === 0) return { ci: null, p: null };
    const atOrBelow = vs.filter((x) => x <= 0).length;
    const atOrAbove = vs.filter((x) => x >= 0).length;
    return { ci: percentileInterval(r, m, "paired-bootstrap"), p: Math.min(1, (2 * Math.min(atOrBelow, atOrAbove)) / vs.length) };
  });
}
