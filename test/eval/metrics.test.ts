import { describe, expect, it } from "vitest";
import { computeMetrics, sampleStd } from "../../src/eval/metrics.js";
import type { ResultRecord } from "../../src/eval/results-file.js";
import { resultRecord } from "./eval-fixtures.js";

const usage = (llmCalls: number, wallMs: number): ResultRecord["usage"] => ({ llmCalls, searchCalls: 1, promptTokens: 100, completionTokens: 20, costUsd: 0.01, wallMs, byAgent: {} });
const H0 = { visual: 0, knowledge: 0, reasoning: 0, total: 0, resolved: 0 };

/**
 * Three items (a, b, c) × two runs:
 *   run 0: a right, b wrong, c FAILED          → 1/3
 *   run 1: a right, b right, c abstained       → 2/3
 */
const FIXED: ResultRecord[] = [
  resultRecord("a", 0, "completed", {
    strata: { body_system: "X" },
    stability: { answers: ["A", "B", "A"], rgm: 0.5, entropy: 1 },
    cu: { pathId: "path-1", cu: 1.8, evidence: 1, coherence: 0.8, repairPenalty: 0, repairs: 0 },
    answerSupport: 1,
    hallucinations: { visual: 1, knowledge: 2, reasoning: 0, total: 3, resolved: 2 },
    usage: usage(10, 1000),
    ratings: [{ rater: "r1", truthfulness: 5, informativeness: 5, consistency: null, txi: 100, rel: 1 }],
  }),
  resultRecord("b", 0, "completed", {
    correct: false,
    strata: { body_system: "Y" },
    stability: { answers: ["B", "B", "B"], rgm: 0, entropy: 0 },
    answerSupport: 0.5,
    hallucinations: { visual: 0, knowledge: 1, reasoning: 1, total: 2, resolved: 0 },
    errors: [{ branch: "rollout-2", code: "LLM_TIMEOUT", message: "timed out" }],
    usage: usage(12, 2000),
    ratings: [{ rater: "r1", truthfulness: 2, informativeness: 3, consistency: 0.5, txi: 24, rel: 0.12 }],
  }),
  resultRecord("c", 0, "failed", {
    strata: { body_system: "X" },
    stability: { answers: [null, "C"], rgm: 9, entropy: 9 }, // a failed record's stability is not averaged
    errors: [{ branch: "rollout-0", code: "LLM_FATAL", message: "x" }], // nor its branch failures
    error: { code: "LLM_RETRYABLE", message: "HTTP 429 after 5 attempts" },
    usage: usage(3, 500),
  }),
  resultRecord("a", 1, "completed", {
    strata: { body_system: "X" },
    stability: { answers: ["A", "C", "A"], rgm: 1, entropy: 1 },
    cu: { pathId: "path-2", cu: 1.2, evidence: 0.5, coherence: 0.7, repairPenalty: 0, repairs: 0 },
    usage: usage(10, 1000),
    ratingErrors: [{ rater: "r1", code: "LLM_BAD_OUTPUT", message: "bad" }],
  }),
  resultRecord("b", 1, "completed", {
    strata: { body_system: "Y" },
    cu: { pathId: "path-1", cu: 0.9, evidence: 0.5, coherence: 0.9, repairPenalty: 0.5, repairs: 1 },
    usage: usage(11, 1500),
  }),
  resultRecord("c", 1, "abstained", { correct: false, strata: { body_system: "X" }, answer: null, hallucinations: H0, usage: usage(8, 1000) }),
];

describe("computeMetrics on a fixed set", () => {
  const m = computeMetrics(FIXED);

  it("accuracy: per run, mean ± sample std, failed and abstained count as wrong", () => {
    expect(m).toMatchObject({ items: 3, runs: 2, records: 6, correct: 3, failed: 1, abstained: 1 });
    // calls per run: 10 + 12 + 3, 10 + 11 + 8; cost 0.01 each record.
    expect(m.accuracyByRun).toMatchObject([
      { run: 0, n: 3, correct: 1, accuracy: 1 / 3, llmCalls: 25, cacheHits: 0, costUsd: 0.03 },
      { run: 1, n: 3, correct: 2, accuracy: 2 / 3, llmCalls: 29, cacheHits: 0, costUsd: 0.03 },
    ]);
    // Wilson 1/3 by hand: centre (1/3 + 0.6403)/2.2805 = 0.4269, half 0.3654 → [0.0615, 0.7923].
    expect(m.accuracyByRun[0]!.ci).toMatchObject({ method: "wilson", n: 3 });
    expect(m.accuracyByRun[0]!.ci!.lo).toBeCloseTo(0.0615, 4);
    expect(m.accuracyByRun[0]!.ci!.hi).toBeCloseTo(0.7923, 4);
    // Two runs: the overall interval resamples the three items with both their runs.
    expect(m.accuracyCi).toMatchObject({ method: "cluster-bootstrap", n: 3, resamples: 2000, seed: 1 });
    expect(m.accuracyCi!.lo).toBeLessThanOrEqual(m.accuracy!);
    expect(m.accuracyCi!.hi).toBeGreaterThanOrEqual(m.accuracy!);
    expect(m.runsFromCache).toEqual([]);
    // mean = (1/3 + 2/3)/2 = 0.5; std = sqrt(((1/3 − 1/2)² + (2/3 − 1/2)²)/(2 − 1)) = sqrt(2/36) ≈ 0.2357
    expect(m.accuracy).toBeCloseTo(0.5, 12);
    expect(m.accuracyStd).toBeCloseTo(Math.sqrt(2 / 36), 12);
    // Excluding the one failed record: 3 right of 5.
    expect(m.accuracyExcludingFailed).toBeCloseTo(0.6, 12);
  });

  it("strata pooled over runs", () => {
    // X: a0 ✓, c0 ✗, a1 ✓, c1 ✗ → 2/4. Y: b0 ✗, b1 ✓ → 1/2.
    expect(m.strata).toMatchObject({ body_system: { X: { n: 4, correct: 2, accuracy: 0.5 }, Y: { n: 2, correct: 1, accuracy: 0.5 } } });
    // Y is one item (b) with one right and one wrong run: every resample of it is 1/2.
    expect(m.strata["body_system"]!["Y"]!.ci).toMatchObject({ lo: 0.5, hi: 0.5, method: "cluster-bootstrap", n: 1 });
  });

  it("RGM, entropy, CU parts, answer support", () => {
    // Non-failed records with stability: a0 (0.5, 1), b0 (0, 0), a1 (1, 1).
    expect(m.stabilityN).toBe(3);
    expect(m.rgm).toBeCloseTo((0.5 + 0 + 1) / 3, 12);
    expect(m.entropy).toBeCloseTo(2 / 3, 12);
    // CU over a0, a1, b1: cu (1.8 + 1.2 + 0.9)/3 = 1.3; evidence (1 + .5 + .5)/3; coherence (.8 + .7 + .9)/3 = .8; penalty .5/3; repairs 1/3.
    expect(m.cu!.n).toBe(3);
    expect(m.cu!.cu).toBeCloseTo(1.3, 12);
    expect(m.cu!.evidence).toBeCloseTo(2 / 3, 12);
    expect(m.cu!.coherence).toBeCloseTo(0.8, 12);
    expect(m.cu!.repairPenalty).toBeCloseTo(0.5 / 3, 12);
    expect(m.cu!.repairs).toBeCloseTo(1 / 3, 12);
    expect(m.answerSupport).toBeCloseTo(0.75, 12);
  });

  it("hallucinations by stage, usage per item, failures", () => {
    // a0 (1, 2, 0; 2 resolved) + b0 (0, 1, 1) → visual 1, knowledge 3, reasoning 1, total 5; per item /6.
    expect(m.hallucinations).toMatchObject({ visual: 1, knowledge: 3, reasoning: 1, total: 5, resolved: 2, perItem: { visual: 1 / 6, knowledge: 3 / 6, reasoning: 1 / 6, total: 5 / 6 } });
    // Item c never flags a claim, a flags 3 in run 0, b 2: the lowest resample (all c) is 0, the highest (all a) 3/2.
    const total = m.hallucinations.perItemCi!.total!;
    expect(total.lo).toBeGreaterThanOrEqual(0);
    expect(total.hi).toBeLessThanOrEqual(1.5);
    expect(total.lo).toBeLessThan(5 / 6);
    expect(total.hi).toBeGreaterThan(5 / 6);
    // calls 10 + 12 + 3 + 10 + 11 + 8 = 54 → 9 per item; wall 1000 + 2000 + 500 + 1000 + 1500 + 1000 = 7000.
    expect(m.usage.total).toEqual({ llmCalls: 54, searchCalls: 6, promptTokens: 600, completionTokens: 120, costUsd: 0.06, wallMs: 7000 });
    expect(m.usage.perItem.llmCalls).toBe(9);
    expect(m.usage.perItem.wallMs).toBeCloseTo(7000 / 6, 9);
    expect(m.usage.perItem.costUsd).toBeCloseTo(0.01, 12);
    expect(m.failures).toEqual({ byCode: { LLM_RETRYABLE: 1 }, items: [{ id: "c", run: 0, code: "LLM_RETRYABLE", message: "HTTP 429 after 5 attempts" }] });
    expect(m.branchFailures).toEqual({ LLM_TIMEOUT: 1 });
  });

  it("reliability: T, I, T×I and CMHR as docs/architecture.md#scores", () => {
    // a0: T5 I5, no image (C = 1) → T×I 100, Rel 1. b0: T2 I3 C0.5 → T×I 24, Rel 0.4·0.6·0.5 = 0.12.
    // mean T×I 62; mean Rel 0.56 → CMHR 44.
    const r = m.reliability!;
    expect(r.raters).toEqual(["r1"]);
    expect(r.ratingFailures).toBe(1);
    expect(r.overall.n).toBe(2);
    expect(r.overall.meanTruthfulness).toBeCloseTo(3.5, 12);
    expect(r.overall.meanInformativeness).toBeCloseTo(4, 12);
    expect(r.overall.meanTxI).toBeCloseTo(62, 12);
    expect(r.overall.cmhr).toBeCloseTo(44, 12);
  });
});

describe("edge cases", () => {
  it("no records: nulls, not NaN", () => {
    const m = computeMetrics([]);
    expect(m).toMatchObject({ items: 0, records: 0, accuracy: null, accuracyStd: null, rgm: null, cu: null, reliability: null, accuracyExcludingFailed: null });
    expect(m.usage.perItem.llmCalls).toBe(0);
  });

  it("one run has no std; sampleStd matches the textbook value", () => {
    expect(computeMetrics([resultRecord("a", 0)]).accuracyStd).toBeNull();
    // 2, 4, 4, 4, 5, 5, 7, 9: mean 5, Σ(x−5)² = 32, sample variance 32/7.
    expect(sampleStd([2, 4, 4, 4, 5, 5, 7, 9])).toBeCloseTo(Math.sqrt(32 / 7), 12);
  });
});
