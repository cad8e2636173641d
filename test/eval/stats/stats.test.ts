import { describe, expect, it } from "vitest";
import {
  accuracyAtCoverage,
  aurc,
  binomialHalfCdf,
  bootstrapMean,
  brier,
  calibration,
  clusterBootstrap,
  ece,
  equalMassBins,
  holm,
  mcnemarExact,
  optimalAurc,
  pairedComparison,
  proposeThreshold,
  quantile,
  reliabilityBins,
  riskCoverage,
  selectivePrediction,
  thresholdForRisk,
  wilson,
  itemClusters,
  type Scored,
} from "../../../src/eval/stats/index.js";

const s = (confidence: number, correct: boolean, item?: string): Scored => ({ confidence, correct, item });

describe("Wilson score interval", () => {
  // Newcombe (1998), "Two-sided confidence intervals for the single proportion", Stat Med 17:857, Table II method 3.
  it.each([
    [81, 263, 0.2553, 0.3662],
    [15, 148, 0.0624, 0.1605],
    [0, 20, 0.0, 0.1611],
    [1, 29, 0.0061, 0.1718],
  ])("%i/%i matches Newcombe's published interval", (k, n, lo, hi) => {
    const w = wilson(k, n)!;
    expect(w.lo).toBeCloseTo(lo, 4);
    expect(w.hi).toBeCloseTo(hi, 4);
    expect(w.method).toBe("wilson");
  });

  it("is exact at the ends and null for no trials", () => {
    expect(wilson(10, 10)!.hi).toBe(1);
    expect(wilson(0, 10)!.lo).toBe(0);
    expect(wilson(0, 0)).toBeNull();
    // By hand: 5/10, z = 1.96: centre 0.5, half = 1.96/1.38415·√(0.025 + 0.009604) = 0.26340.
    const w = wilson(5, 10)!;
    expect(w.lo).toBeCloseTo(0.2366, 4);
    expect(w.hi).toBeCloseTo(0.7634, 4);
  });
});

describe("McNemar's exact test", () => {
  // Fagerland, Lydersen & Laake (2013), BMC Med Res Methodol 13:91, the airway hyper-responsiveness example: b = 1, c = 7, exact conditional p = 0.070.
  it("matches Fagerland et al.'s published exact p (b=1, c=7)", () => {
    const r = mcnemarExact(1, 7, 13);
    expect(r.p).toBeCloseTo(0.0703, 4);
    expect(r.p).toBeCloseTo((2 * (1 + 8)) / 256, 12); // by hand: 2·P(X ≤ 1), X ~ Bin(8, ½)
    expect([r.b, r.c, r.concordant]).toEqual([1, 7, 13]);
  });

  it("is 1 without discordant pairs or when they balance, and symmetric", () => {
    expect(mcnemarExact(0, 0).p).toBe(1);
    expect(mcnemarExact(4, 4).p).toBe(1);
    expect(mcnemarExact(0, 5).p).toBeCloseTo(2 / 32, 12);
    expect(mcnemarExact(7, 1).p).toBe(mcnemarExact(1, 7).p);
  });

  it("stays finite for many discordant pairs", () => {
    expect(binomialHalfCdf(5000, 10000)).toBeGreaterThan(0.5);
    expect(binomialHalfCdf(5000, 10000)).toBeLessThan(0.51);
    expect(mcnemarExact(400, 600).p).toBeGreaterThan(0);
    expect(mcnemarExact(400, 600).p).toBeLessThan(1e-9);
  });
});

describe("Holm's correction", () => {
  it("multiplies the i-th smallest by m − i + 1 and keeps the order monotone (by hand)", () => {
    // sorted 0.005, 0.01, 0.03, 0.04 → 0.02, 0.03, 0.06, max(0.06, 0.04) = 0.06
    const out = holm([0.01, 0.04, 0.03, 0.005]);
    [0.03, 0.06, 0.06, 0.02].forEach((v, i) => expect(out[i]).toBeCloseTo(v, 12));
    expect(holm([0.6, 0.9])).toEqual([1, 1]);
  });
});

describe("calibration", () => {
  const xs = [s(0.9, true), s(0.8, false), s(0.6, true), s(0.3, false)];

  it("ECE over equal-mass bins, by hand", () => {
    // bins {0.3✗, 0.6✓} and {0.8✗, 0.9✓}: ½·|0.5 − 0.45| + ½·|0.5 − 0.85| = 0.025 + 0.175
    expect(ece(xs, 2)).toBeCloseTo(0.2, 12);
    // one bin per record: mean |y − c| = (0.1 + 0.8 + 0.4 + 0.3) / 4
    expect(ece(xs, 10)).toBeCloseTo(0.4, 12);
    expect(equalMassBins(xs, 3).map((b) => b.length)).toEqual([1, 1, 2]);
  });

  it("Brier score, by hand", () => {
    expect(brier(xs)).toBeCloseTo((0.01 + 0.64 + 0.16 + 0.09) / 4, 12);
  });

  it("a perfectly calibrated score has ECE 0 and its diagram on the diagonal", () => {
    // 10 records at 0.2 with 2 right, 10 at 0.8 with 8 right
    const cal = [...Array.from({ length: 10 }, (_, i) => s(0.2, i < 2)), ...Array.from({ length: 10 }, (_, i) => s(0.8, i < 8))];
    expect(ece(cal, 2)).toBeCloseTo(0, 12);
    const bins = reliabilityBins(cal, 2);
    for (const [b, v] of bins.map((b, i) => [b, [0.2, 0.8][i]!] as const)) {
      expect(b.meanConfidence).toBeCloseTo(v, 12);
      expect(b.accuracy).toBeCloseTo(v, 12);
    }
    expect(bins[0]!.ci!.method).toBe("wilson");
    const c = calibration(cal, { bins: 2 })!;
    expect(c.ece.value).toBeCloseTo(0, 12);
    expect(c.ece.ci!.resamples).toBe(2000);
  });
});

describe("selective prediction", () => {
  const xs = [s(0.9, true), s(0.8, false), s(0.6, true), s(0.3, false)];

  it("AURC is the mean risk of the top k, by hand", () => {
    // risks at k = 1..4: 0, 1/2, 1/3, 2/4
    expect(aurc(xs)).toBeCloseTo((0 + 0.5 + 1 / 3 + 0.5) / 4, 12);
    // best order ✓✓✗✗: 0, 0, 1/3, 1/2
    expect(optimalAurc(4, 2)).toBeCloseTo((1 / 3 + 0.5) / 4, 12);
    expect(aurc([s(0.9, true), s(0.8, true), s(0.2, false), s(0.1, false)])).toBeCloseTo(optimalAurc(4, 2), 12);
  });

  it("spreads the errors of a tie evenly, whatever the input order", () => {
    expect(aurc([s(0.5, true), s(0.5, false)])).toBeCloseTo((0.5 + 0.5) / 2, 12);
    expect(aurc([s(0.5, false), s(0.5, true)])).toBeCloseTo(0.5, 12);
    expect(riskCoverage([s(0.5, false), s(0.5, true), s(0.9, true)])).toEqual([
      { threshold: 0.9, coverage: 1 / 3, risk: 0, kept: 1 },
      { threshold: 0.5, coverage: 1, risk: 1 / 3, kept: 3 },
    ]);
  });

  it("accuracy at coverage and the threshold for a target risk", () => {
    expect(accuracyAtCoverage(xs, 0.5)).toBe(0.5);
    expect(accuracyAtCoverage(xs, 0.25)).toBe(1);
    const t = thresholdForRisk(xs, 0.4)!;
    expect([t.threshold, t.coverage, t.kept, t.errors]).toEqual([0.6, 0.75, 3, 1]);
    expect(thresholdForRisk(xs, 0)!.threshold).toBe(0.9);
    expect(thresholdForRisk([s(0.9, false)], 0.1)).toBeNull();
  });

  it("summarises with intervals", () => {
    const sp = selectivePrediction(xs)!;
    expect(sp.excessAurc).toBeCloseTo(aurc(xs) - optimalAurc(4, 2), 12);
    expect(sp.atCoverage.map((c) => c.coverage)).toEqual([0.5, 0.8, 0.9]);
    expect(sp.aurc.ci!.lo).toBeLessThanOrEqual(sp.aurc.value);
    const p = proposeThreshold(xs, 0.4)!;
    expect(p.threshold).toBe(0.6);
    expect(p.thresholdCi!.lo).toBeLessThanOrEqual(p.thresholdCi!.hi);
  });
});

describe("bootstrap", () => {
  it("is reproducible with its seed and moves with another", () => {
    const xs = Array.from({ length: 50 }, (_, i) => (i * 37) % 11);
    const a = bootstrapMean(xs, { seed: 42 });
    expect(bootstrapMean(xs, { seed: 42 })).toEqual(a);
    expect(bootstrapMean(xs, { seed: 43 })).not.toEqual(a);
    expect(a!.resamples).toBe(2000);
    const m = xs.reduce((x, y) => x + y, 0) / xs.length;
    expect(a!.lo).toBeLessThan(m);
    expect(a!.hi).toBeGreaterThan(m);
  });

  it("a constant sample has a degenerate interval; none for no data", () => {
    expect(bootstrapMean([3, 3, 3])).toMatchObject({ lo: 3, hi: 3 });
    expect(bootstrapMean([])).toBeNull();
  });

  it("clusters runs by item: identical runs do not narrow the interval", () => {
    const items = Array.from({ length: 40 }, (_, i) => i % 3 === 0);
    const one = clusterBootstrap(
      items.map((c) => [c]),
      (xs) => xs.filter(Boolean).length / xs.length,
      { seed: 5 },
    )!;
    const tenRuns = clusterBootstrap(
      items.map((c) => Array.from({ length: 10 }, () => c)),
      (xs) => xs.filter(Boolean).length / xs.length,
      { seed: 5 },
    )!;
    expect(tenRuns.method).toBe("cluster-bootstrap");
    expect(tenRuns.lo).toBeCloseTo(one.lo, 10);
    expect(tenRuns.hi).toBeCloseTo(one.hi, 10);
  });

  it("quantile interpolates like R type 7", () => {
    expect(quantile([1, 2, 3, 4], 0.5)).toBe(2.5);
    expect(quantile([1, 2, 3, 4], 0.025)).toBeCloseTo(1.075, 12);
  });
});

describe("the one-pass bootstraps of calibration and selective prediction", () => {
  it("give the intervals the generic cluster bootstrap gives on the same resamples", () => {
    // 30 items × 2 runs, distinct confidences (no ties, whose order within a bin the two passes may list differently).
    const xs = Array.from({ length: 60 }, (_, i) => s(((i * 37) % 60) / 60 + 0.001 * i, (i * 7) % 5 < 3, `q${i % 30}`));
    const clusters = itemClusters(xs);
    const cal = calibration(xs, { seed: 3 })!;
    const sel = selectivePrediction(xs, { seed: 3 })!;
    const generic = (stat: (x: Scored[]) => number) => clusterBootstrap(clusters, stat, { seed: 3 })!;
    for (const [got, want] of [
      [cal.ece.ci!, generic((x) => ece(x))],
      [cal.brier.ci!, generic(brier)],
      [sel.aurc.ci!, generic(aurc)],
      [sel.atCoverage[1]!.accuracy.ci!, generic((x) => accuracyAtCoverage(x, 0.8))],
    ] as const) {
      expect(got.lo).toBeCloseTo(want.lo, 10);
      expect(got.hi).toBeCloseTo(want.hi, 10);
      expect(got.method).toBe("cluster-bootstrap");
    }
  });
});

describe("paired comparison", () => {
  it("differences, discordant counts and what is not shared", () => {
    const a = [0, 1, 2, 3, 4, 5].map((i) => ({ item: `q${i}`, run: 0, correct: i < 5 }));
    const b = [0, 1, 2, 3, 4, 6].map((i) => ({ item: `q${i}`, run: 0, correct: i < 2 }));
    const p = pairedComparison(a, b);
    expect([p.sharedItems, p.onlyA, p.onlyB, p.pairs]).toEqual([5, 1, 1, 5]);
    expect(p.difference!.value).toBeCloseTo(3 / 5, 12);
    expect(p.difference!.ci!.method).toBe("paired-bootstrap");
    expect(p.mcnemar).toMatchObject({ b: 3, c: 0, concordant: 2 });
    expect(p.mcnemar.p).toBeCloseTo(2 / 8, 12);
  });
});
