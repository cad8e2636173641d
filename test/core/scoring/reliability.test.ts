import { describe, expect, it } from "vitest";
import { aggregateReliability, cmhr, rel, txi } from "../../../src/core/scoring/reliability.js";
import { MedmmvError } from "../../../src/core/contracts/errors.js";

describe("reliability metrics", () => {
  it("T×I = T·I/25·100", () => {
    expect(txi(5, 5)).toBe(100);
    expect(txi(4, 3)).toBeCloseTo(48, 12); // 12/25·100
    expect(txi(1, 1)).toBeCloseTo(4, 12); // 1/25·100
  });

  it("Rel = (T/5)(I/5)C, with C = 1 when there is no image", () => {
    expect(rel({ truthfulness: 4, informativeness: 3, consistency: 0.5 })).toBeCloseTo(0.8 * 0.6 * 0.5, 12); // 0.24
    expect(rel({ truthfulness: 4, informativeness: 3 })).toBeCloseTo(0.48, 12);
    expect(rel({ truthfulness: 4, informativeness: 3, consistency: null })).toBeCloseTo(0.48, 12);
  });

  it("CMHR = 100·(1 − mean Rel)", () => {
    const items = [
      { truthfulness: 5, informativeness: 5, consistency: 1 }, // Rel 1
      { truthfulness: 4, informativeness: 3, consistency: 0.5 }, // Rel 0.24
      { truthfulness: 2, informativeness: 5 }, // Rel 0.4·1·1 = 0.4
    ];
    // mean Rel = 1.64/3 = 0.546667; CMHR = 45.3333
    expect(cmhr(items)).toBeCloseTo(100 * (1 - 1.64 / 3), 10);
    const agg = aggregateReliability(items);
    expect(agg.n).toBe(3);
    expect(agg.meanTruthfulness).toBeCloseTo(11 / 3, 12);
    expect(agg.meanInformativeness).toBeCloseTo(13 / 3, 12);
    // T×I: 100, 48, 40 → mean 62.6667
    expect(agg.meanTxI).toBeCloseTo(188 / 3, 10);
    expect(agg.cmhr).toBeCloseTo(100 * (1 - 1.64 / 3), 10);
  });

  it("gives nulls for an empty set and refuses CMHR of nothing", () => {
    expect(aggregateReliability([])).toEqual({ n: 0, meanTruthfulness: null, meanInformativeness: null, meanTxI: null, cmhr: null });
    expect(() => cmhr([])).toThrow(MedmmvError);
  });

  it("validates ranges with INVALID_INPUT", () => {
    const cases: Array<() => unknown> = [
      () => txi(0, 3),
      () => txi(3, 5.5),
      () => rel({ truthfulness: 3, informativeness: 3, consistency: 1.2 }),
      () => rel({ truthfulness: 3, informativeness: 3, consistency: -0.1 }),
      () => rel({ truthfulness: Number.NaN, informativeness: 3 }),
      () => aggregateReliability([{ truthfulness: 6, informativeness: 1 }]),
    ];
    for (const f of cases) {
      try {
        f();
        expect.unreachable("should have thrown");
      } catch (e) {
        expect(e).toBeInstanceOf(MedmmvError);
        expect((e as MedmmvError).code).toBe("INVALID_INPUT");
      }
    }
  });
});
