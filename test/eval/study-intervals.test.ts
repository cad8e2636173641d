import { describe, expect, it } from "vitest";
import type { ConversationOutcome } from "../../src/eval/conversation/types.js";
import { summaryMarkdown, buildSummary } from "../../src/eval/report.js";
import type { ResultRecord } from "../../src/eval/results-file.js";
import { baseItem, studyIntervals } from "../../src/eval/study-intervals.js";
import { resultRecord } from "./eval-fixtures.js";

/** A conversation of two turns: the first right or not, the diagnosis (second) right or not. */
function conversation(id: string, first: boolean, diagnosis: boolean): ResultRecord {
  const turn = (i: number, step: string, correct: boolean) => ({ turn: i, question: "q", step, expected: "e", answer: "a", category: correct ? "e" : "x", correct, contextConflict: !correct });
  const c: ConversationOutcome = { order: "si", diagnosisStep: "dx", planned: 2, turns: [turn(0, "s1", first), turn(1, "dx", diagnosis)], failed: false };
  return { ...resultRecord(`${id}@si`, 0, "completed", { correct: first && diagnosis }), conversation: c } as ResultRecord;
}

describe("study figures get bootstrap intervals from the studies' own definitions", () => {
  it("Dr-LLaVA A_Q, A_C, A_D, H_cc per order", () => {
    // 10 conversations: 5 all right, 5 with the first turn wrong (diagnosis right).
    const records = Array.from({ length: 10 }, (_, i) => conversation(`c${i}`, i < 5, true));
    const iv = studyIntervals(records)!.conversation!["si"]!;
    // A_D is 1 in every resample; A_C is 1/2 with an interval strictly inside (0, 1).
    expect(iv.aD).toMatchObject({ lo: 1, hi: 1, method: "bootstrap", n: 10, resamples: 2000 });
    expect(iv.aC!.lo).toBeGreaterThan(0);
    expect(iv.aC!.lo).toBeLessThan(0.5);
    expect(iv.aC!.hi).toBeGreaterThan(0.5);
    expect(iv.aC!.hi).toBeLessThan(1);
    expect(iv.aQ!.lo).toBeGreaterThan(0.5);
    expect(iv.hCC!.hi).toBeLessThan(1);
    // Reproducible: the same records give the same intervals.
    expect(studyIntervals(records)!.conversation!["si"]).toEqual(iv);
    expect(studyIntervals([resultRecord("plain", 0, "completed")])).toBeUndefined();
  });

  it("robustness: option orders of one item resample together, a twice-drawn item counts twice", () => {
    const records: ResultRecord[] = [];
    // 8 items × 2 orders: items 0–3 choose the same option in both orders, items 4–7 flip.
    for (let i = 0; i < 8; i++)
      for (const p of [1, 2]) {
        const letters = { A: "x", B: "y" };
        const option = i < 4 ? "A" : p === 1 ? "A" : "B";
        records.push(resultRecord(`q${i}#p${p}`, 0, "completed", { answer: { option, text: "" }, permutation: { baseId: `q${i}`, index: p, of: 2, letters } } as Partial<ResultRecord>));
      }
    expect(baseItem("q3#p2")).toBe("q3");
    const s = buildSummary(records, { label: "cot", method: "cot", dataset: "medqa", input: "/x.jsonl", images: null, missingImages: "error", config: {}, runs: 1, concurrency: 1, models: {}, raters: [], prompts: {} } as never);
    expect(s.robustness!.consistency).toBe(0.5);
    const ci = s.studyIntervals!.robustness!.consistency!;
    expect(ci.n).toBe(8); // clusters are items, not records
    expect(ci.lo).toBeLessThan(0.5);
    expect(ci.hi).toBeGreaterThan(0.5);
    const md = summaryMarkdown(s);
    expect(md).toMatch(/\| robustness: answer consistency across option orders\s+\|\s+50\.0 \|\s+\[\d+\.\d–\d+\.\d\] \|/);
  });
});
