import { describe, expect, it } from "vitest";
import { apportion, selectItems } from "../../src/eval/sampling.js";

const items = (spec: Record<string, number>) =>
  Object.entries(spec).flatMap(([sys, n]) => Array.from({ length: n }, (_, i) => ({ id: `${sys}-${i}`, strata: { body_system: sys, question_type: i % 2 ? "Reasoning" : "Understanding" } })));

describe("apportion (largest remainder)", () => {
  it("matches the hand computation", () => {
    // 10 seats over sizes 50, 30, 20 (total 100): quotas 5, 3, 2 exactly.
    expect(apportion(10, [50, 30, 20])).toEqual([5, 3, 2]);
    // 5 seats over 7, 2, 1 (total 10): quotas 3.5, 1.0, 0.5 → floors 3, 1, 0 (4 seats); the
    // leftover seat goes to the largest fraction, 0.5, tied between groups 0 and 2 → group 0.
    expect(apportion(5, [7, 2, 1])).toEqual([4, 1, 0]);
    // 4 seats over 1, 1, 1, 1, 1, 1 (quotas 0.667 each): the first four groups.
    expect(apportion(4, [1, 1, 1, 1, 1, 1])).toEqual([1, 1, 1, 1, 0, 0]);
    expect(apportion(50, [3, 4])).toEqual([3, 4]);
  });
});

describe("selectItems", () => {
  const all = items({ Cardiovascular: 10, Skeletal: 6, Nervous: 4 });

  it("--limit keeps the first N in file order", () => {
    const { selected, report } = selectItems(all, { limit: 3 });
    expect(selected.map((x) => x.id)).toEqual(["Cardiovascular-0", "Cardiovascular-1", "Cardiovascular-2"]);
    expect(report).toMatchObject({ available: 20, selected: 3, limit: 3 });
  });

  it("stratified sampling is proportional, deterministic for a seed, and keeps file order", () => {
    const a = selectItems(all, { sample: 10, stratify: ["body_system"], seed: 3 });
    const b = selectItems([...all].reverse(), { sample: 10, stratify: ["body_system"], seed: 3 });
    // 10 of 20: Cardiovascular 10 → 5, Skeletal 6 → 3, Nervous 4 → 2.
    expect(a.report.groups).toEqual({ Cardiovascular: { available: 10, selected: 5 }, Nervous: { available: 4, selected: 2 }, Skeletal: { available: 6, selected: 3 } });
    const count = (sys: string) => a.selected.filter((x) => x.strata.body_system === sys).length;
    expect([count("Cardiovascular"), count("Skeletal"), count("Nervous")]).toEqual([5, 3, 2]);
    // The same items whatever the file order; output follows the input order.
    expect(a.selected.map((x) => x.id).sort()).toEqual(b.selected.map((x) => x.id).sort());
    expect(a.selected.map((x) => all.indexOf(x))).toEqual([...a.selected.map((x) => all.indexOf(x))].sort((p, q) => p - q));
    const c = selectItems(all, { sample: 10, stratify: ["body_system"], seed: 4 });
    expect(c.selected.map((x) => x.id)).not.toEqual(a.selected.map((x) => x.id));
  });

  it("stratifies on several keys and on items missing a key", () => {
    const withMissing = [...all, { id: "odd", strata: {} as Record<string, string> }];
    const { report } = selectItems(withMissing, { sample: 7, stratify: ["body_system", "question_type"], seed: 1 });
    expect(Object.keys(report.groups!)).toContain("(none) / (none)");
    expect(Object.values(report.groups!).reduce((s, g) => s + g.selected, 0)).toBe(7);
  });

  it("--stratify without --sample is a usage error", () => {
    expect(() => selectItems(all, { stratify: ["body_system"] })).toThrow(/--sample/);
  });
});
