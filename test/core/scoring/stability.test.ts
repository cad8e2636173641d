import { describe, expect, it } from "vitest";
import { answerDistribution, entropyBits, rgm, stabilityReport } from "../../../src/core/scoring/stability.js";

describe("entropyBits", () => {
  it("computes base-2 entropy from counts or from a distribution", () => {
    expect(entropyBits([1, 1])).toBe(1);
    expect(entropyBits({ A: 0.25, B: 0.25, C: 0.25, D: 0.25 })).toBe(2);
    // H(1/3, 2/3) = −(1/3)log2(1/3) − (2/3)log2(2/3) = 0.5283 + 0.3900 = 0.9183
    expect(entropyBits([1, 2])).toBeCloseTo(0.9183, 4);
    expect(entropyBits({ C: 1 / 3, D: 2 / 3 })).toBeCloseTo(entropyBits([1, 2]), 12);
  });

  it("is 0 for a single outcome, for zeros and for empty input", () => {
    expect(entropyBits([7])).toBe(0);
    expect(entropyBits([3, 0])).toBe(0);
    expect(entropyBits([])).toBe(0);
    expect(entropyBits({})).toBe(0);
  });

  it("rejects negative or non-finite values", () => {
    expect(() => entropyBits([1, -1])).toThrow(/entropy/);
    expect(() => entropyBits([Number.NaN])).toThrow(/entropy/);
  });
});

describe("answerDistribution", () => {
  it("gives shares with failed rollouts excluded", () => {
    // C, D, D, D, C with two failures: 2 C and 3 D of 5 answers
    expect(answerDistribution(["C", null, "D", "D", "D", null, "C"])).toEqual({ C: 0.4, D: 0.6 });
    expect(answerDistribution([null, null])).toEqual({});
  });
});

describe("rgm (eq. 2)", () => {
  it("matches the hand computation for C, D, D, D, C", () => {
    // p1 = {C:1}           H = 0
    // p2 = {C:.5, D:.5}    H = 1
    // p3 = {C:1/3, D:2/3}  H = 0.9183
    // p4 = {C:.25, D:.75}  H = −.25·log2(.25) − .75·log2(.75) = 0.5 + 0.3113 = 0.8113
    // RGM = (0 + 1 + 0.9183 + 0.8113) / 4 = 0.6824
    const answers = ["C", "D", "D", "D", "C"];
    expect(rgm(answers)).toBeCloseTo(0.6824, 4);
    const h = (ps: number[]) => -ps.reduce((s, p) => s + p * Math.log2(p), 0);
    expect(rgm(answers)).toBeCloseTo((0 + 1 + h([1 / 3, 2 / 3]) + h([0.25, 0.75])) / 4, 12);
  });

  it("depends on order (the last answer never enters a prefix)", () => {
    // D, D, D, C, C: p1..p4 = {D}, {D}, {D}, {D:.75, C:.25} → (0+0+0+0.8113)/4 = 0.2028
    expect(rgm(["D", "D", "D", "C", "C"])).toBeCloseTo(0.8113 / 4, 4);
    // A, B: only p1 = {A} → 0 even though the final distribution is split
    expect(rgm(["A", "B"])).toBe(0);
  });

  it("removes failed rollouts before indexing", () => {
    expect(rgm(["C", null, "D", "D", null, "D", "C"])).toBeCloseTo(rgm(["C", "D", "D", "D", "C"]), 12);
  });

  it("is 0 when all answers agree and for fewer than two answers", () => {
    expect(rgm(["B", "B", "B", "B", "B"])).toBe(0);
    expect(rgm(["B"])).toBe(0);
    expect(rgm([])).toBe(0);
    expect(rgm([null, "A", null])).toBe(0);
  });
});

describe("stabilityReport", () => {
  it("fills the DiagnosisResult stability block", () => {
    const r = stabilityReport(["C", "D", "D", "D", "C"]);
    expect(r.rolloutAnswers).toEqual(["C", "D", "D", "D", "C"]);
    expect(r.distribution).toEqual({ C: 0.4, D: 0.6 });
    // H(0.4, 0.6) = 0.5288 + 0.4422 = 0.9710
    expect(r.entropy).toBeCloseTo(0.971, 3);
    expect(r.rgm).toBeCloseTo(0.6824, 4);
  });
});
