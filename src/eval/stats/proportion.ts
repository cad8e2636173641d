import { LEVEL, Z95, type Estimate, type Interval } from "./interval.js";

/**
 * Wilson's score interval for k successes in n trials (Wilson 1927; Newcombe 1998, method 3):
 * unlike the normal approximation it stays inside [0, 1] and keeps its coverage near 0 and 1
 * and for small n. Null for n = 0.
 */
export function wilson(k: number, n: number, z = Z95): Interval | null {
  if (n === 0) return null;
  const p = k / n;
  const z2 = z * z;
  const denom = 1 + z2 / n;
  const centre = (p + z2 / (2 * n)) / denom;
  const half = (z / denom) * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n));
  // At k = 0 or k = n one bound is exactly 0 or 1; rounding must not push it past.
  return { lo: k === 0 ? 0 : Math.max(0, centre - half), hi: k === n ? 1 : Math.min(1, centre + half), level: LEVEL, method: "wilson", n };
}

/** k / n with its Wilson interval; null for n = 0. */
export function proportion(k: number, n: number): Estimate | null {
  return n === 0 ? null : { value: k / n, ci: wilson(k, n) };
}
