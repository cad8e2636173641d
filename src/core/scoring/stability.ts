import { MedmmvError } from "../contracts/errors.js";

/**
 * Base-2 Shannon entropy of counts or of a probability distribution (either is normalised by
 * its sum). Zero entries contribute nothing; an empty or all-zero input has entropy 0.
 */
export function entropyBits(input: readonly number[] | Readonly<Record<string, number>>): number {
  const values = Array.isArray(input) ? (input as readonly number[]) : Object.values(input);
  let total = 0;
  for (const v of values) {
    if (!Number.isFinite(v) || v < 0) throw new MedmmvError("INVALID_INPUT", "entropy needs finite values ≥ 0");
    total += v;
  }
  if (total === 0) return 0;
  let h = 0;
  for (const v of values) {
    if (v === 0) continue;
    const p = v / total;
    h -= p * Math.log2(p);
  }
  // -0 and 1e-17-style noise from a single outcome read as "not zero" in reports.
  return h <= 1e-12 ? 0 : h;
}

/** Share of each answer among the rollouts that produced one (failed rollouts, null, excluded). Keys sorted. */
export function answerDistribution(answers: readonly (string | null)[]): Record<string, number> {
  const counts = new Map<string, number>();
  for (const a of answers) if (a !== null) counts.set(a, (counts.get(a) ?? 0) + 1);
  const n = [...counts.values()].reduce((s, c) => s + c, 0);
  const out: Record<string, number> = {};
  for (const key of [...counts.keys()].sort()) out[key] = counts.get(key)! / n;
  return out;
}

/**
 * Reasoning-path Generation Metric, the paper's eq. 2 (arXiv 2509.24314), as fixed in docs/architecture.md#scores:
 *
 *   RGM = 1/(k−1) · Σ_{i=2..k} H_2(p_{i−1})
 *
 * where c_1..c_k are the rollout answers in the order they were generated, p_{i−1} is the
 * empirical distribution of the first i−1 answers c_1..c_{i−1}, and H_2 is base-2 entropy.
 * In words: after each new rollout except the last, measure how split the answers seen so
 * far are, and average those k−1 measurements. The last answer c_k therefore never enters a
 * prefix (its effect shows only in the final distribution's entropy, reported separately).
 * Failed rollouts (null) are removed before indexing; with fewer than 2 answers RGM is 0.
 */
export function rgm(answers: readonly (string | null)[]): number {
  const c = answers.filter((a): a is string => a !== null);
  const k = c.length;
  if (k < 2) return 0;
  const counts = new Map<string, number>();
  let sum = 0;
  for (let i = 2; i <= k; i++) {
    const newest = c[i - 2]!; // c_{i−1}, the last answer of the prefix c_1..c_{i−1}
    counts.set(newest, (counts.get(newest) ?? 0) + 1);
    sum += entropyBits([...counts.values()]);
  }
  return sum / (k - 1);
}

/** The `stability` block of a DiagnosisResult. */
export function stabilityReport(answers: readonly (string | null)[]): {
  rolloutAnswers: (string | null)[];
  distribution: Record<string, number>;
  rgm: number;
  entropy: number;
} {
  const distribution = answerDistribution(answers);
  return { rolloutAnswers: [...answers], distribution, rgm: rgm(answers), entropy: entropyBits(distribution) };
}

/**
 * The `stability` block over answer clusters (answer-clusters.ts): the distribution, RGM and
 * entropy take each rollout's cluster key, so "Inferior STEMI" and "inferior wall MI" count as
 * one answer; the same figures over the lexical keys stay beside them as `lexical`.
 */
export function clusteredStabilityReport<C>(lexicalAnswers: readonly (string | null)[], clusterKeys: readonly (string | null)[], clusters: C[]) {
  const byCluster = stabilityReport(clusterKeys);
  const lexical = stabilityReport(lexicalAnswers);
  return {
    rolloutAnswers: [...lexicalAnswers],
    distribution: byCluster.distribution,
    rgm: byCluster.rgm,
    entropy: byCluster.entropy,
    clusters,
    lexical: { distribution: lexical.distribution, rgm: lexical.rgm, entropy: lexical.entropy },
  };
}
