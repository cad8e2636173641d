import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { PATHWAY_LIMITS, type Pathway } from "../../../src/core/contracts/pathway.js";
import { CasePathwayRef } from "../../../src/core/contracts/case-pathway-ref.js";
import { labelAnswer } from "../../../src/core/pathways/labeller.js";
import { parsePathway } from "../../../src/core/pathways/load-pathway.js";
import { checkAnswerSequence } from "../../../src/core/pathways/consistency.js";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

/** A pathway of `steps` × `categories` × `keywords` synthetic keywords (`word(i)` gives the i-th word). */
function synthetic(steps: number, categories: number, keywords: number, paths: number, word: (i: number) => string): Pathway {
  let n = 0;
  const s = Array.from({ length: steps }, (_, i) => ({
    id: `s${i}`,
    question: `Question ${i}?`,
    categories: Array.from({ length: categories }, (_, j) => ({ id: `c${j}`, label: `C${j}`, keywords: Array.from({ length: keywords }, () => word(n++)) })),
  }));
  return {
    id: "synthetic",
    title: "Synthetic pathway",
    steps: s,
    paths: Array.from({ length: paths }, (_, p) => ({ id: `p${p}`, outcome: `P${p}`, sequence: Object.fromEntries(s.map((x, i) => [x.id, `c${(p + i) % categories}`])) })),
  } as Pathway;
}

describe("pathways have bounded cost (issue: one inline pathway crash-looped the store)", () => {
  it("the old schema maximum (50 steps × 50 categories × 200 keywords, 500 paths, ~7 MB) is refused, quickly, naming the limits", () => {
    const huge = synthetic(50, 50, 200, 500, (i) => `kw${i} phrase number ${i}`);
    expect(JSON.stringify(huge).length).toBeGreaterThan(7_000_000);
    const started = performance.now();
    const ref = CasePathwayRef.safeParse(huge);
    expect(ref.success).toBe(false);
    let message = "";
    try {
      parsePathway(huge);
    } catch (e) {
      message = (e as Error).message;
      expect((e as { code?: string }).code).toBe("INVALID_INPUT");
    }
    expect(message).toMatch(/steps: Too big: expected array to have <=20 items/);
    expect(performance.now() - started).toBeLessThan(20_000);
  });

  it("totals are capped even when every array is within its own limit", () => {
    const perCategory = Math.ceil(PATHWAY_LIMITS.totalKeywords / (PATHWAY_LIMITS.steps * PATHWAY_LIMITS.categoriesPerStep)) + 1;
    const many = synthetic(PATHWAY_LIMITS.steps, PATHWAY_LIMITS.categoriesPerStep, perCategory, 1, (i) => `w${i}`);
    expect(() => parsePathway(many)).toThrow(/keywords; at most 1000/);
    const long = synthetic(4, 4, 20, 1, (i) => `${"x".repeat(90)}${i}`);
    expect(() => parsePathway(long)).toThrow(/characters; at most 20000/);
  });

  it("a pathway at the new limits builds and labels in milliseconds, on any text, and the heap stays flat", () => {
    // The most a pathway may hold: every keyword a multi-word phrase, prefix keywords among them.
    const perCategory = Math.floor(PATHWAY_LIMITS.totalKeywords / (PATHWAY_LIMITS.steps * PATHWAY_LIMITS.categoriesPerStep));
    const chars = Math.floor(PATHWAY_LIMITS.totalPatternChars / PATHWAY_LIMITS.totalKeywords) - 1;
    const vocabulary = ["no", "not", "blast", "plasma", "cell", "abnormal", "low", "quality", "near", "particle", "aml", "mm"];
    const word = (i: number) => {
      const parts = [vocabulary[i % vocabulary.length]!, vocabulary[(i * 7) % vocabulary.length]!, `t${i}`];
      const k = parts.join(" ").slice(0, chars);
      return i % 5 === 0 ? `${k}*` : k;
    };
    const limit = parsePathway(synthetic(PATHWAY_LIMITS.steps, PATHWAY_LIMITS.categoriesPerStep, perCategory, PATHWAY_LIMITS.paths, word));
    const text = fc.array(fc.oneof(fc.constantFrom(...vocabulary, ",", ".", "cannot be excluded", "rule out", "t1", "t12"), fc.string({ maxLength: 12 })), { minLength: 100, maxLength: 2000 }).map((w) => w.join(" "));

    const times: number[] = [];
    fc.assert(
      fc.property(text, (t) => {
        const started = performance.now();
        const labels = limit.steps.map((s) => labelAnswer(t, s));
        checkAnswerSequence(limit, labels.map((l) => ({ step: l.step, category: l.category })));
        times.push(performance.now() - started);
      }),
      { numRuns: 60 },
    );
    times.sort((a, b) => a - b);
    // All 20 steps labelled and the sequence checked: milliseconds, with room for a loaded 2-core machine.
    expect(times[Math.floor(times.length / 2)]!).toBeLessThan(100);

    // Distinct texts each round, so nothing is served from the last-text cache.
    const sample = (r: number) => Array.from({ length: 80 }, (_, i) => `No ${vocabulary[i % 12]} t${i + r} cannot be excluded, near particle t${i * 3}.`).join(" ");
    for (let r = 0; r < 10; r++) for (const s of limit.steps) labelAnswer(sample(r), s);
    gc();
    const before = process.memoryUsage().heapUsed;
    for (let r = 0; r < 100; r++) for (const s of limit.steps) labelAnswer(sample(r), s);
    gc();
    expect(process.memoryUsage().heapUsed - before).toBeLessThan(8 * 1024 * 1024);
  });
});
