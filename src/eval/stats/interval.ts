/**
 * A 95 % interval and how it was computed, as every figure of a summary carries it: the
 * method is named so a reader of summary.json knows whether it is Wilson's score interval for a
 * proportion or a percentile bootstrap (with its resamples and seed, so it can be reproduced).
 */
export interface Interval {
  lo: number;
  hi: number;
  level: number;
  method: "wilson" | "bootstrap" | "cluster-bootstrap" | "paired-bootstrap";
  /** Observations behind it (records for a proportion, items for a cluster bootstrap). */
  n: number;
  resamples?: number;
  seed?: number;
}

/** A point value with its interval; the interval is null where nothing was observed. */
export interface Estimate {
  value: number;
  ci: Interval | null;
}

export const LEVEL = 0.95;
/** Φ⁻¹(0.975): the normal quantile of a two-sided 95 % interval. */
export const Z95 = 1.959963984540054;
