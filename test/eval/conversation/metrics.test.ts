import { describe, expect, it } from "vitest";
import { conversationMetrics, metricsByOrder } from "../../../src/eval/conversation/metrics.js";
import { orderTurns } from "../../../src/eval/conversation/orders.js";
import type { ConversationOutcome, TurnOutcome } from "../../../src/eval/conversation/types.js";
import { loadPathway } from "../../../src/core/pathways/load-pathway.js";

const STEPS = ["image-quality", "cell-quality", "abnormality", "proliferation", "diagnosis"];

/** A conversation from per-turn marks: c = correct, x = wrong, ! = wrong and in conflict from here on. */
function conv(marks: string, order: ConversationOutcome["order"] = "si", steps = STEPS): ConversationOutcome {
  let conflict = false;
  const turns: TurnOutcome[] = [...marks].map((m, i) => {
    if (m === "!") conflict = true;
    return { turn: i + 1, question: `q${i}`, step: steps[i]!, expected: "e", answer: "a", category: m === "c" ? "e" : "other", correct: m === "c", contextConflict: conflict };
  });
  return { order, diagnosisStep: "diagnosis", planned: marks.length, turns, failed: false };
}

describe("conversation metrics (reference §2.4), against hand-computed values", () => {
  it("A_Q, A_C, A_D, H_cc on a fixed set of five conversations", () => {
    const set = [
      conv("ccccc"), // all correct, no conflict
      conv("ccccx"), // wrong diagnosis, no conflict
      conv("cc!cc"), // a conflict at turn 3 (answer wrong there), diagnosis right
      conv("xxxx!"), // one right? none: 0 of 5, conflict at the end
      { order: "si", diagnosisStep: "diagnosis", planned: 5, turns: [], failed: true } as ConversationOutcome, // failed: 5 planned turns, all wrong
    ];
    const m = conversationMetrics(set);
    // Questions: 5 × 5 = 25. Correct: 5 + 4 + 4 + 0 + 0 = 13.
    expect(m.questions).toBe(25);
    expect(m.aQ).toBeCloseTo(13 / 25, 12);
    // All-correct conversations: only the first, of 5.
    expect(m.aC).toBeCloseTo(1 / 5, 12);
    // Diagnosis right: conversations 1 and 3, of 5 (earlier steps ignored).
    expect(m.aD).toBeCloseTo(2 / 5, 12);
    // Conflicts: conversations 3 and 4, of the 4 that were labelled (the failed one has no labels).
    expect(m.hCC).toBeCloseTo(2 / 4, 12);
    expect(m).toMatchObject({ conversations: 5, failed: 1 });
  });

  it("A_D uses the last diagnosis answer when it is asked twice, and leaves out a conversation that never asks it (ii-sample)", () => {
    const twice = conv("ccx", "ii", ["diagnosis", "cell-quality", "diagnosis"]); // last diagnosis answer wrong
    const never = conv("cc", "ii-sample", ["cell-quality", "abnormality"]);
    const once = conv("xc", "ii-sample", ["image-quality", "diagnosis"]);
    const m = conversationMetrics([twice, never, once]);
    // Diagnosed right: "once"; asked: "twice" and "once".
    expect(m.aD).toBeCloseTo(1 / 2, 12);
    expect(m.diagnosisAsked).toBe(2);
    // Correct turns: 2 + 2 + 1 of 3 + 2 + 2.
    expect(m.aQ).toBeCloseTo(5 / 7, 12);
    expect(m.aC).toBeCloseTo(1 / 3, 12);
    expect(m.hCC).toBe(0);
  });

  it("per order, and null when there is nothing to measure", () => {
    const byOrder = metricsByOrder([conv("ccccc", "si"), conv("ccccx", "df"), conv("ccccc", "df")]);
    expect(Object.keys(byOrder)).toEqual(["si", "df"]);
    expect(byOrder.si).toMatchObject({ aQ: 1, aC: 1, aD: 1, hCC: 0 });
    expect(byOrder.df!.aQ).toBeCloseTo(9 / 10, 12);
    expect(byOrder.df!.aC).toBe(0.5);
    expect(conversationMetrics([])).toMatchObject({ aQ: null, aC: null, aD: null, hCC: null, hCCReference: null });
  });

  it("H_cc (reference) counts an answer that names no category as off every valid path; ours lets it pass", () => {
    const noMatch = (order: ConversationOutcome["order"]) => {
      const c = conv("ccccc", order);
      c.turns[2] = { ...c.turns[2]!, category: "no-match", correct: false };
      return c;
    };
    const unlabelled = conv("ccccc");
    unlabelled.turns[0] = { ...unlabelled.turns[0]!, category: null, correct: false };
    const m = conversationMetrics([noMatch("si"), unlabelled, conv("ccccc"), conv("cc!cc")]);
    expect(m.hCC).toBeCloseTo(1 / 4, 12);
    expect(m.hCCReference).toBeCloseTo(3 / 4, 12);
  });
});

describe("question orders", () => {
  const bm = loadPathway("bone-marrow");
  const turns = STEPS.map((s, i) => ({ question: `q${i}`, step: s, expected: "e" }));

  it("si keeps the dataset's order; df reverses the whole sequence (the reference's reverse order)", () => {
    expect(orderTurns(turns, "si", bm, 1, "x").map((t) => t.step)).toEqual(STEPS);
    expect(orderTurns(turns, "df", bm, 1, "x").map((t) => t.step)).toEqual(["diagnosis", "proliferation", "abnormality", "cell-quality", "image-quality"]);
  });

  it("ii asks every question once in a seeded order; ii-sample 2 to 5 of them without replacement", () => {
    const a = orderTurns(turns, "ii", bm, 7, "item-1").map((t) => t.step);
    expect([...a].sort()).toEqual([...STEPS].sort());
    expect(orderTurns(turns, "ii", bm, 7, "item-1").map((t) => t.step)).toEqual(a);
    expect(Array.from({ length: 10 }, (_, s) => orderTurns(turns, "ii", bm, s, "item-1").map((t) => t.step).join()).filter((x, i, all) => all.indexOf(x) === i).length).toBeGreaterThan(1);
    const samples = Array.from({ length: 60 }, (_, i) => orderTurns(turns, "ii-sample", bm, 7, `item-${i}`).map((t) => t.step));
    for (const d of samples) {
      expect(d.length).toBeGreaterThanOrEqual(2);
      expect(new Set(d).size).toBe(d.length);
    }
    expect(new Set(samples.map((d) => d.length))).toEqual(new Set([2, 3, 4, 5]));
  });

  it("ii orders are pinned: a resumed run asks the questions its first session drew", () => {
    const ii = (order: "ii" | "ii-sample", seed: number, id: string) => orderTurns(turns, order, bm, seed, id).map((t) => t.step);
    expect(ii("ii", 7, "item-1")).toEqual(["diagnosis", "proliferation", "abnormality", "image-quality", "cell-quality"]);
    expect(ii("ii", 1, "test1")).toEqual(["cell-quality", "image-quality", "diagnosis", "proliferation", "abnormality"]);
    expect(ii("ii-sample", 3, "test2")).toEqual(["proliferation", "image-quality", "cell-quality", "diagnosis", "abnormality"]);
    expect(ii("ii-sample", 42, "conv-aml")).toEqual(["cell-quality", "diagnosis"]);
  });
});
