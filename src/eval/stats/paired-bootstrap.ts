import { seededRandom } from "../../core/seeded-random.js";
import { DEFAULT_RESAMPLES, DEFAULT_SEED, quantile, type BootstrapOptions } from "./bootstrap.js";
import { LEVEL, type Interval } from "./interval.js";

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
  const resamples = o.resamples ?? DEFAULT_RESAMPLES;
  const seed = o.seed ?? DEFAULT_SEED;
  if (m === 0) return Array.from({ length: k }, () => ({ ci: null, p: null }));
  const rand = seededRandom(seed);
  const values: number[][] = Array.from({ length: k }, () => []);
  const counts = new Uint32Array(m);
  for (let b = 0; b < resamples; b++) {
    counts.fill(0);
    for (let i = 0; i < m; i++) counts[Math.floor(rand() * m)]!++;
    const v = diff(counts);
    for (let j = 0; j < k; j++) {
      const x = v[j];
      if (typeof x === "number" && Number.isFinite(x)) values[j]!.push(x);
    }
  }
  const alpha = (1 - LEVEL) / 2;
  return values.map((vs) => {
    if (vs.length === 0) return { ci: null, p: null };
    vs.sort((a, b) => a - b);
    const atOrBelow = vs.filter((x) => x <= 0).length;
    const atOrAbove = vs.filter((x) => x >= 0).length;
    return {
      ci: { lo: quantile(vs, alpha), hi: quantile(vs, 1 - alpha), level: LEVEL, method: "paired-bootstrap", n: m, resamples, seed },
      p: Math.min(1, (2 * Math.min(atOrBelow, atOrAbove)) / vs.length),
    };
  });
}
