import { describe, expect, it } from "vitest";
import { answerSupport, computeCu, selectBest } from "../../../src/core/scoring/cu.js";
import { MedmmvError } from "../../../src/core/contracts/errors.js";

describe("computeCu", () => {
  it("applies CU = we·Se + wc·Sc − wr·Pr with default weights", () => {
    // Se = 4/5 = 0.8; Sc = 0.9; Pr = 1/3; CU = 0.8 + 0.9 − 0.3333… = 1.3667
    const s = computeCu({ supported: 4, totalClaims: 5, coherence: 0.9, repairs: 1, maxRepairs: 3 }, [1, 1, 1]);
    expect(s.evidence).toBeCloseTo(0.8, 12);
    expect(s.coherence).toBeCloseTo(0.9, 12);
    expect(s.repairPenalty).toBeCloseTo(1 / 3, 12);
    expect(s.cu).toBeCloseTo(0.8 + 0.9 - 1 / 3, 12);
  });

  it("weights each term", () => {
    // Se = 3/4 = 0.75, Sc = 0.5, Pr = 2/4 = 0.5; CU = 2·0.75 + 0.5·0.5 − 3·0.5 = 1.5 + 0.25 − 1.5 = 0.25
    const s = computeCu({ supported: 3, totalClaims: 4, coherence: 0.5, repairs: 2, maxRepairs: 4 }, [2, 0.5, 3]);
    expect(s.cu).toBeCloseTo(0.25, 12);
  });

  it("uses 0 for S_evidence with no claims and for P_repair with no repair budget", () => {
    const s = computeCu({ supported: 0, totalClaims: 0, coherence: 0.6, repairs: 2, maxRepairs: 0 }, [1, 1, 1]);
    expect(s).toEqual({ evidence: 0, coherence: 0.6, repairPenalty: 0, cu: 0.6 });
  });

  it("clamps coherence and the repair penalty to [0, 1]", () => {
    // Sc 1.7 → 1, Pr 5/3 → 1: CU = 1 + 1 − 1 = 1
    const hi = computeCu({ supported: 2, totalClaims: 2, coherence: 1.7, repairs: 5, maxRepairs: 3 }, [1, 1, 1]);
    expect(hi).toEqual({ evidence: 1, coherence: 1, repairPenalty: 1, cu: 1 });
    // Sc −0.2 → 0: CU = 0.5 + 0 − 0 = 0.5
    const lo = computeCu({ supported: 1, totalClaims: 2, coherence: -0.2, repairs: 0, maxRepairs: 3 }, [1, 1, 1]);
    expect(lo.coherence).toBe(0);
    expect(lo.cu).toBe(0.5);
  });

  it("can go negative (all unsupported, full repair budget spent)", () => {
    // 0 + 0.1 − 1 = −0.9
    expect(computeCu({ supported: 0, totalClaims: 3, coherence: 0.1, repairs: 3, maxRepairs: 3 }, [1, 1, 1]).cu).toBeCloseTo(-0.9, 12);
  });

  it("rejects impossible input", () => {
    const bad = [
      { supported: 3, totalClaims: 2, coherence: 0.5, repairs: 0, maxRepairs: 3 },
      { supported: -1, totalClaims: 2, coherence: 0.5, repairs: 0, maxRepairs: 3 },
      { supported: 1, totalClaims: 2, coherence: Number.NaN, repairs: 0, maxRepairs: 3 },
      { supported: 1, totalClaims: 2, coherence: 0.5, repairs: Number.POSITIVE_INFINITY, maxRepairs: 3 },
    ];
    for (const parts of bad) {
      expect(() => computeCu(parts, [1, 1, 1])).toThrow(MedmmvError);
    }
    try {
      computeCu({ supported: 1, totalClaims: 2, coherence: 0.5, repairs: 0, maxRepairs: 3 }, [1, -1, 1]);
      expect.unreachable();
    } catch (e) {
      expect((e as MedmmvError).code).toBe("INVALID_INPUT");
    }
  });
});

describe("selectBest", () => {
  it("picks the highest CU", () => {
    expect(
      selectBest([
        { index: 0, answer: "A", cu: 1.2 },
        { index: 1, answer: "B", cu: 1.9 },
        { index: 2, answer: "A", cu: 1.5 },
      ]),
    ).toBe(1);
  });

  it("breaks a CU tie by the answer held by more scored paths", () => {
    // B and C tie at 1.5; B is held by 2 paths (indices 1, 3), C by 1 → index 1.
    // The third B path (index 3) has a lower CU but still counts as a vote.
    expect(
      selectBest([
        { index: 0, answer: "C", cu: 1.5 },
        { index: 1, answer: "B", cu: 1.5 },
        { index: 3, answer: "B", cu: 0.2 },
      ]),
    ).toBe(1);
  });

  it("counts votes over scored paths only (failed paths do not vote)", () => {
    // Without the failed ones, A and B each hold 1 scored path → lower index (2) wins.
    expect(
      selectBest([
        { index: 4, answer: "A", cu: 1 },
        { index: 2, answer: "B", cu: 1 },
        { index: 0, answer: "A", cu: null },
        { index: 1, answer: "A", cu: null },
      ]),
    ).toBe(2);
  });

  it("breaks a full tie by the lower index regardless of order", () => {
    expect(
      selectBest([
        { index: 5, answer: "A", cu: 0.7 },
        { index: 3, answer: "B", cu: 0.7 },
      ]),
    ).toBe(3);
  });

  it("treats float noise as a tie", () => {
    // 0.1 + 0.2 ≠ 0.3 in binary floating point; both paths hold one answer each → lower index.
    expect(
      selectBest([
        { index: 1, answer: "A", cu: 0.1 + 0.2 },
        { index: 0, answer: "B", cu: 0.3 },
      ]),
    ).toBe(0);
  });

  it("never picks a failed candidate unless all failed", () => {
    expect(
      selectBest([
        { index: 0, answer: "A", cu: null },
        { index: 1, answer: "B", cu: -0.5 },
      ]),
    ).toBe(1);
    expect(selectBest([{ index: 0, answer: "A", cu: null }, { index: 1, answer: null, cu: null }])).toBeNull();
    expect(selectBest([])).toBeNull();
  });
});

describe("answerSupport", () => {
  it("is Σ max(CU,0) of the selected answer ÷ Σ max(CU,0) of all scored paths", () => {
    const c = [
      { index: 0, answer: "D", cu: 1.5 },
      { index: 1, answer: "C", cu: 0.5 },
      { index: 2, answer: "D", cu: 1.0 },
      { index: 3, answer: "C", cu: -0.4 }, // clipped to 0
      { index: 4, answer: "D", cu: null }, // failed, excluded
    ];
    // (1.5 + 1.0) / (1.5 + 0.5 + 1.0 + 0) = 2.5 / 3
    expect(answerSupport(c, "D")).toBeCloseTo(2.5 / 3, 12);
    // 0.5 / 3
    expect(answerSupport(c, "C")).toBeCloseTo(0.5 / 3, 12);
    expect(answerSupport(c, "Z")).toBe(0);
  });

  it("is null when nothing has a positive CU or no answer was selected", () => {
    expect(answerSupport([{ index: 0, answer: "A", cu: -1 }, { index: 1, answer: "A", cu: 0 }], "A")).toBeNull();
    expect(answerSupport([{ index: 0, answer: "A", cu: 1 }], null)).toBeNull();
  });
});
