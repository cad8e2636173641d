/**
 * McNemar's exact test for paired binary outcomes (two methods on the same items): only the
 * discordant pairs carry information. Under H0 (the methods are equally accurate) the b pairs
 * "A right, B wrong" out of the b + c discordant ones are Binomial(b + c, ½); the two-sided p
 * is twice the smaller tail, capped at 1 (the conditional exact test, as R's
 * exact2x2::mcnemar.exact and statsmodels' `mcnemar(exact=True)` compute it).
 */
export interface McNemarResult {
  /** A right, B wrong. */
  b: number;
  /** A wrong, B right. */
  c: number;
  /** Pairs where both agree (right or wrong). */
  concordant: number;
  p: number;
}

/** P(X ≤ k) for X ~ Binomial(n, ½), summed in log space so large n neither under- nor overflows. */
export function binomialHalfCdf(k: number, n: number): number {
  if (k < 0) return 0;
  if (k >= n) return 1;
  let logPmf = n * Math.log(0.5); // P(X = 0)
  let logSum = logPmf;
  for (let i = 0; i < k; i++) {
    logPmf += Math.log((n - i) / (i + 1));
    const hi = Math.max(logSum, logPmf);
    logSum = hi + Math.log(Math.exp(logSum - hi) + Math.exp(logPmf - hi));
  }
  return Math.min(1, Math.exp(logSum));
}

export function mcnemarExact(b: number, c: number, concordant = 0): McNemarResult {
  const n = b + c;
  const p = n === 0 ? 1 : Math.min(1, 2 * binomialHalfCdf(Math.min(b, c), n));
  return { b, c, concordant, p };
}

/**
 * Holm's step-down adjustment of m p-values (family-wise error control without Bonferroni's
 * loss of power): the i-th smallest is multiplied by m − i + 1, made monotone, capped at 1.
 * Returned in the input order.
 */
export function holm(ps: readonly number[]): number[] {
  const m = ps.length;
  const order = ps.map((p, i) => ({ p, i })).sort((a, b) => a.p - b.p);
  const out = new Array<number>(m);
  let running = 0;
  order.forEach(({ p, i }, rank) => {
    running = Math.max(running, Math.min(1, (m - rank) * p));
    out[i] = running;
  });
  return out;
}
