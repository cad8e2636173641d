import { describe, expect, it } from "vitest";
import { buildSummary, compareSummaries, summaryMarkdown } from "../../../src/eval/report.js";
import type { RunManifest } from "../../../src/eval/manifest.js";
import { computeStagewise, fixBreak } from "../../../src/eval/stagewise/metrics.js";
import type { JudgedTrace, StageJudgment, StageJudgments, StagewiseRecord } from "../../../src/eval/stagewise/types.js";
import { resultRecord } from "../eval-fixtures.js";

const S = { visual: "v v v", knowledge: "k k k", reasoning: "r r r", answer: "a" };
const t = (answerCorrect: JudgedTrace["answerCorrect"], valid = true): JudgedTrace => ({ stages: S, raw: "", valid, validation: valid ? "OK" : "Missing required step: [Knowledge Recall]", attempts: 1, answerCorrect: valid ? answerCorrect : null, answerReason: "" });
const h = (x: 0 | 1, by: StageJudgment["by"] = "judge"): StageJudgment => ({ hallucinated: x, reason: "r", by });
const all = (v: 0 | 1, k: 0 | 1, r: 0 | 1): StageJudgments => ({ visual: h(v), knowledge: h(k), reasoning: h(r) });

function rec(id: string, sw: Omit<StagewiseRecord, "format" | "hasReference">, status: "completed" | "abstained" | "failed" = "completed") {
  return resultRecord(id, 0, status, { method: "stagewise", stagewise: { format: "structured", hasReference: true, ...sw } });
}

/**
 * Five items, by hand:
 *  i1 base right;   V right, K right, VK right
 *  i2 base wrong;   V right (fix), K wrong, VK right (fix)
 *  i3 base invalid (counts wrong for Fix/Break, out of Acc); V wrong, K right (fix), VK invalid
 *  i4 base judge failed (-1: out of Acc and of Fix/Break); V right, K right, VK right
 *  i5 base right;   V wrong (break), K judge failed (-1), VK right; no K … run for VK? yes
 * plus a failed record that is ignored, and a record without a stage-wise part.
 */
const records = [
  rec("i1", { trace: t(1), judged: all(0, 0, 0), replacements: { V: { trace: t(1), judged: { knowledge: h(0), reasoning: h(0) } }, K: { trace: t(1), judged: { visual: h(0), reasoning: h(0) } }, VK: { trace: t(1), judged: { reasoning: h(0) } } } }),
  rec("i2", { trace: t(0), judged: all(1, 0, 1), replacements: { V: { trace: t(1), judged: { knowledge: h(1), reasoning: h(0) } }, K: { trace: t(0), judged: { visual: h(1), reasoning: h(1) } }, VK: { trace: t(1), judged: { reasoning: h(0) } } } }),
  rec("i3", { trace: t(null, false), judged: { visual: h(0), knowledge: h(1, "empty"), reasoning: h(1) }, replacements: { V: { trace: t(0), judged: { knowledge: h(0), reasoning: h(1) } }, K: { trace: t(1), judged: { visual: h(0), reasoning: h(0) } }, VK: { trace: t(null, false), judged: { reasoning: h(1, "empty") } } } }, "abstained"),
  rec("i4", { trace: t(-1), judged: all(0, 1, 0), replacements: { V: { trace: t(1), judged: { knowledge: h(1, "judge-failed"), reasoning: h(0) } }, K: { trace: t(1), judged: { visual: h(0), reasoning: h(0) } }, VK: { trace: t(1), judged: { reasoning: h(0) } } } }),
  rec("i5", { trace: t(1), judged: all(0, 0, 0), replacements: { V: { trace: t(0), judged: { knowledge: h(0), reasoning: h(1) } }, K: { trace: t(-1), judged: { visual: h(1), reasoning: h(0) } }, VK: { trace: t(1), judged: { reasoning: h(0) } } } }),
  rec("i6", { trace: t(1), judged: all(1, 1, 1), replacements: {} }, "failed"),
  resultRecord("i7", 0),
];

describe("ClinHallu metrics against hand-computed values", () => {
  const sw = computeStagewise(records)!;

  it("Acc over trace-valid, judge-valid items; ΔAcc on each setting's own subset", () => {
    // Baseline: valid and judged i1 (1), i2 (0), i5 (1) → 2/3; i3 invalid, i4 judge failed, i6 failed.
    expect(sw.baseline).toMatchObject({ correct: 2, total: 3, invalidTraces: 1, judgeFailures: 1 });
    expect(sw.acc).toBeCloseTo(2 / 3, 12);
    // Rep-V: i1 1, i2 1, i3 0, i4 1, i5 0 → 3/5.   Rep-K: i1 1, i2 0, i3 1, i4 1 (i5 -1) → 3/4.   Rep-VK: i1, i2, i4, i5 right (i3 invalid) → 4/4.
    expect(sw.rep.V).toMatchObject({ correct: 3, total: 5 });
    expect(sw.rep.V!.deltaAcc).toBeCloseTo(3 / 5 - 2 / 3, 12);
    expect(sw.rep.K).toMatchObject({ correct: 3, total: 4, judgeFailures: 1 });
    expect(sw.rep.K!.deltaAcc).toBeCloseTo(3 / 4 - 2 / 3, 12);
    expect(sw.rep.VK).toMatchObject({ correct: 4, total: 4, invalidTraces: 1 });
    expect(sw.rep.VK!.deltaAcc).toBeCloseTo(1 - 2 / 3, 12);
  });

  it("H from the replacement runs, over every record holding the stage (invalid and judge-failed included)", () => {
    // H_V = Rep-K visual: i2 1, i5 1 of 5.  H_K = Rep-V knowledge: i2 1, i4 1 (judge failed) of 5.  H_R = Rep-VK reasoning: i3 1 (empty) of 5.
    expect([sw.hV, sw.hK, sw.hR]).toEqual([2 / 5, 2 / 5, 1 / 5]);
    expect(sw.hFrom).toEqual({ hV: "rep-K", hK: "rep-V", hR: "rep-VK" });
    expect(sw.rep.V!.stages.knowledge).toMatchObject({ hallucinated: 2, total: 5, judgeFailures: 1 });
    // Baseline rates: visual i2 → 1/5; knowledge i3 (empty), i4 → 2/5; reasoning i2, i3 → 2/5.
    expect(sw.baseline.stages.visual.rate).toBe(1 / 5);
    expect(sw.baseline.stages.knowledge.rate).toBe(2 / 5);
    expect(sw.baseline.stages.reasoning.rate).toBe(2 / 5);
    expect(sw.records).toBe(5);
  });

  it("Fix/Break (Eq. 15): invalid counts wrong on its side, a failed judge leaves the item out", () => {
    // Base sides: i1 1, i2 0, i3 0 (invalid), i4 out (-1), i5 1.
    // Rep-V: i2 0→1 fix, i3 0→0, i5 1→0 break → Fix 1/2, Break 1/2 (i1 1→1).
    expect(sw.rep.V).toMatchObject({ fixed: 1, baseWrong: 2, broken: 1, baseRight: 2, excluded: 1, fix: 0.5, break: 0.5 });
    // Rep-K: i2 0→0, i3 0→1 fix, i5 out (-1 on the replacement side) → Fix 1/2, Break 0/1.
    expect(sw.rep.K).toMatchObject({ fixed: 1, baseWrong: 2, broken: 0, baseRight: 1, excluded: 2, fix: 0.5, break: 0 });
    // Rep-VK: i2 0→1 fix, i3 0→0 (invalid), i1 and i5 stay right → Fix 1/2, Break 0/2.
    expect(sw.rep.VK).toMatchObject({ fixed: 1, baseWrong: 2, broken: 0, baseRight: 2, excluded: 1, fix: 0.5, break: 0 });
    expect(fixBreak([])).toMatchObject({ fix: null, break: null });
    // An item with no run of the setting is left out.
    expect(fixBreak([{ base: t(0), rep: undefined }])).toMatchObject({ excluded: 1, fix: null });
  });

  it("no stage-wise records → no stagewise section; summary.json, summary.md and eval report carry the tables", () => {
    expect(computeStagewise([resultRecord("x", 0)])).toBeNull();
    const manifest = { schema: "medmmv-eval-run/1", dataset: "clinhallu", input: "/d/gold_cot.jsonl", images: null, missingImages: "error", copBase: "auto", fieldMap: null, method: "stagewise", label: "stagewise (structured, rep V,K,VK)", runs: 1, concurrency: 1, selection: { sample: null, stratify: [], seed: 1, limit: null }, config: {}, models: {}, raters: [], prompts: {}, createdAt: "", version: "" } as RunManifest;
    const a = buildSummary(records, manifest);
    expect(a.stagewise?.acc).toBeCloseTo(2 / 3, 12);
    const md = summaryMarkdown(a);
    expect(md).toContain("## Stage-wise diagnosis (ClinHallu)");
    expect(md).toMatch(/\| stagewise \(structured, rep V,K,VK\) \| stagewise \| clinhallu \| +66\.7 \| +-6\.7 \| +\+8\.3 \| +\+33\.3 \|/);
    const b = buildSummary(records.slice(0, 2), { ...manifest, label: "cot + stage judge", method: "cot" });
    const report = compareSummaries([a, b], ["run-a", "run-b"]);
    expect(report).toContain("### Answer accuracy (ClinHallu Table 2)");
    expect(report).toMatch(/\| run-a +\| stagewise \(structured, rep V,K,VK\) \| +40\.0 \| +40\.0 \| +20\.0 \|/);
    expect(report).toMatch(/\| run-b +\| cot \+ stage judge +\| +50\.0 \| +50\.0 \| +0\.0 \|/);
    expect(report).toMatch(/\| run-a +\| +50\.0 \(1\/2\) \| +50\.0 \(1\/2\) \| +50\.0 \(1\/2\) \| +0\.0 \(0\/1\) \| +50\.0 \(1\/2\) \| +0\.0 \(0\/2\) \|/);
    expect(report).toContain("run-a: trace format structured; 3 of 5 traces in Acc; 1 invalid trace(s) excluded; 1 answer-judge failure(s) excluded; 1 stage-judge failure(s) counted hallucinated.");
  });
});
