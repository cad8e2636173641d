import { rank } from "../sampling.js";

/**
 * An integer in [0, n) drawn from (seed, key) alone: a hash, as --sample draws, so a
 * choice for one item depends neither on the other items nor on which method, run or
 * worker asks — the same seed gives the same choice everywhere, and runs pair up.
 */
export function seededIndex(seed: number, key: string, n: number): number {
  // 52 bits of the hash stay an exact integer; the modulo bias over n ≤ 26 is ~2⁻⁴⁷.
  return parseInt(rank(seed, key).slice(0, 13), 16) % n;
}

/** Fisher–Yates driven by seededIndex, one draw per position. */
export function seededShuffle<T>(xs: readonly T[], seed: number, key: string): T[] {
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    const j = seededIndex(seed, `${key}\u0000${i}`, i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}
