import { describe, expect, it } from "vitest";
import { buildSummary, compareSummaries, summaryMarkdown } from "../../src/eval/report.js";
import { resultRecord, runManifest } from "./eval-fixtures.js";

/** Dollars in the eval report: per item, per correct answer, and against CoT on the same items. */
const usage = (costUsd: number) => ({ llmCalls: 1, searchCalls: 0, promptTokens: 10, completionTokens: 5, costUsd, wallMs: 3, byAgent: {} });
const medmmv = [0, 1, 2, 3].map((i) => resultRecord(`q${i}`, 0, "completed", { method: "medmmv", correct: i < 3, usage: usage(0.2) }));
const cot = [0, 1, 2, 3].map((i) => resultRecord(`q${i}`, 0, "completed", { correct: i < 2, usage: usage(0.01) }));

describe("cost in the eval report", () => {
  const a = buildSummary(medmmv, runManifest("medmmv", "medmmv"), { planned: 4, complete: true });
  const b = buildSummary(cot, runManifest("cot", "cot"), { planned: 4, complete: true });

  it("a run's summary gives the cost per correct answer", () => {
    // $0.80 over 3 correct answers.
    expect(summaryMarkdown(a)).toMatch(/\| cost per correct answer \(USD\)\s*\|\s*\|\s*0\.2667\b/);
  });

  it("side by side: cost per item, per correct answer, and each run's cost over CoT's on the same items", () => {
    const t = compareSummaries([a, b], ["mmv", "cot"]);
    expect(t).toMatch(/\| cost \/ correct answer \(USD\)\s*\|\s*0\.2667\s*\|\s*0\.0200 \(-0\.2467\)\s*\|/);
    expect(t).toMatch(/\| cost ÷ CoT \(same input\)\s*\|\s*20\.0×\s*\|\s*1\.0×\s*\|/);
  });

  it("no CoT ratio against a CoT run of other items", () => {
    const other = buildSummary(cot, { ...runManifest("cot", "cot"), input: "/data/other.jsonl" }, { complete: true });
    expect(compareSummaries([a, other], ["mmv", "cot"])).toMatch(/\| cost ÷ CoT \(same input\)\s*\|\s*—\s*\|\s*1\.0×\s*\|/);
  });
});

describe("unknown cost in the eval report", () => {
  it("a run of an unpriced model says unpriced, never $0; estimated calls are counted", () => {
    const unpriced = [0, 1].map((i) => resultRecord(`q${i}`, 0, "completed", { correct: true, usage: { ...usage(0), unpricedCalls: 1, estimatedCalls: 1 } }));
    const s = buildSummary(unpriced, runManifest("cot", "cot"), { planned: 2, complete: true });
    expect(s.usage.total).toMatchObject({ unpricedCalls: 2, estimatedCalls: 2 });
    const md = summaryMarkdown(s);
    expect(md).toMatch(/\| cost \(USD\)\s*\|\s*unpriced\s*\|\s*unpriced\s*\|/);
    expect(md).toMatch(/tokenizer estimate.*\|\s*2\s*\|/);
  });
});
