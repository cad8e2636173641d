import { describe, expect, it } from "vitest";
import { meanInterval, meanIntervals, ratioInterval, ratioIntervals } from "../../src/eval/record-stats.js";
import { bootstrapCounts } from "../../src/eval/stats/index.js";
import { seededRandom } from "../../src/core/seeded-random.js";

// Records of 40 items, some with two runs (a cluster bootstrap), with figures of different shapes.
const rand = seededRandom(7);
const records = Array.from({ length: 60 }, (_, i) => ({ id: `item-${i % 40}`, flagged: Math.floor(rand() * 4), cost: rand(), correct: rand() < 0.6, zero: 0 }));

describe("figures from one set of resamples", () => {
  it("give each figure exactly the interval its own bootstrap gives", () => {
    const figures = [
      { num: (r: (typeof records)[number]) => r.flagged, den: () => 1 },
      { num: (r: (typeof records)[number]) => r.cost, den: (r: (typeof records)[number]) => (r.correct ? 1 : 0) },
      { num: (r: (typeof records)[number]) => (r.correct ? 1 : 0), den: () => 1 },
    ];
    const together = ratioIntervals(records, figures);
    expect(together).toEqual(figures.map((f) => ratioInterval(records, f.num, f.den)));
    expect(together[0]!.method).toBe("cluster-bootstrap");
    expect(together[0]!.lo).toBeLessThan(together[0]!.hi);
  });

  it("a figure that is zero for every item gets what resampling it would give, without resampling", () => {
    const [zero, flagged] = meanIntervals(records, [(r) => r.zero, (r) => r.flagged]);
    // The bootstrap itself, run on the zero figure's per-item sums.
    const items = new Set(records.map((r) => r.id)).size;
    const runsPerItem = new Map<string, number>();
    for (const r of records) runsPerItem.set(r.id, (runsPerItem.get(r.id) ?? 0) + 1);
    const b = [...runsPerItem.values()];
    const [resampled] = bootstrapCounts(items, (counts) => [0 / counts.reduce((s, c, i) => s + c * b[i]!, 0)], 1, {}, "cluster-bootstrap");
    expect(zero).toEqual(resampled);
    expect(zero).toMatchObject({ lo: 0, hi: 0, n: 40 });
    expect(flagged).toEqual(meanInterval(records, (r) => r.flagged));
    expect(meanIntervals([], [(r: { id: string }) => r.id.length])).toEqual([null]);
  });
});
