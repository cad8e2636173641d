import { describe, expect, it } from "vitest";
import { scanForInjection } from "../../../src/core/agents/untrusted-content.js";
import type { EvalItem } from "../../../src/eval/datasets/types.js";
import { extractOptionLetter, withoutPassages } from "../../../src/eval/answer-match.js";
import { commitAnswer } from "../../../src/eval/methods/cot.js";
import { expandProbes } from "../../../src/eval/probes/expand-items.js";
import { hypothesisStatements, withHypothesis } from "../../../src/eval/probes/hypothesis.js";
import { CONFIRMATION_TEMPLATES, RATIONALISATION_TEMPLATES } from "../../../src/eval/probes/hypothesis-templates.js";
import { pairRecords } from "../../../src/eval/probes/paired.js";
import { computeRobustness } from "../../../src/eval/probes/robustness.js";
import { permutationOrders, permuteItem } from "../../../src/eval/probes/shuffle.js";
import { HYPOTHESIS_KINDS } from "../../../src/eval/probes/types.js";
import { MedmmvError } from "../../../src/core/contracts/errors.js";
import { resultRecord } from "../eval-fixtures.js";

function item(id: string, gold = "B", n = 4): EvalItem {
  const letters = "ABCDEFGHIJ".slice(0, n).split("");
  const options = Object.fromEntries(letters.map((l) => [l, `option ${l.toLowerCase()} of ${id}`]));
  return { id, case: { id, question: `Question of ${id}?`, options }, gold: { kind: "choice", option: gold, text: options[gold]! }, strata: {} };
}

describe("option permutations", () => {
  it("are rotations of a seeded order: within a cycle every option takes every position once", () => {
    const orders = permutationOrders(["A", "B", "C", "D"], 7, "q1", 4);
    expect(orders).toHaveLength(4);
    for (let pos = 0; pos < 4; pos++) expect(new Set(orders.map((o) => o[pos])).size).toBe(4);
    for (const o of orders) expect([...o].sort()).toEqual(["A", "B", "C", "D"]);
    // Each later order is the first rotated by its index.
    orders.forEach((o, k) => expect(o).toEqual([...orders[0]!.slice(k), ...orders[0]!.slice(0, k)]));
  });

  it("start a fresh seeded cycle after all rotations are used", () => {
    const orders = permutationOrders(["A", "B"], 3, "q", 5);
    expect(orders.map((o) => o.join(""))).toHaveLength(5);
    for (const o of orders) expect([...o].sort()).toEqual(["A", "B"]);
    expect(orders[1]).toEqual([...orders[0]!].reverse());
  });

  it("depend on the seed and the item, and only on them", () => {
    const a = permutationOrders(["A", "B", "C", "D", "E"], 1, "q1", 3);
    expect(permutationOrders(["E", "D", "C", "B", "A"], 1, "q1", 3)).toEqual(a);
    const others = [permutationOrders(["A", "B", "C", "D", "E"], 2, "q1", 3), permutationOrders(["A", "B", "C", "D", "E"], 1, "q2", 3)];
    expect(others.some((o) => JSON.stringify(o) !== JSON.stringify(a))).toBe(true);
  });

  it("re-letter the options and move the gold letter with its option", () => {
    const it0 = item("q1", "B");
    const p = permuteItem(it0, ["C", "B", "D", "A"], 2, 3);
    expect(p.id).toBe("q1#p2");
    expect(p.case.id).toBe("q1.p2");
    expect(p.case.options).toEqual({ A: "option c of q1", B: "option b of q1", C: "option d of q1", D: "option a of q1" });
    expect(p.gold).toEqual({ kind: "choice", option: "B", text: "option b of q1" });
    const q = permuteItem(item("q2", "A"), ["C", "B", "D", "A"], 1, 3);
    expect(q.gold.option).toBe("D");
    expect(q.case.options![q.gold.option!]).toBe(q.gold.text);
    expect(q.probe.permutation).toEqual({ index: 1, of: 3, baseId: "q2", letters: { A: "C", B: "B", C: "D", D: "A" } });
    expect(q.warnings).toBeUndefined();
  });

  it("warn when the question itself lists the lettered options (the shuffle cannot reorder them there)", () => {
    const it0 = item("q1");
    it0.case.question += " Answer Choices: (A) option a of q1 (B) option b of q1 (C) option c of q1 (D) option d of q1";
    expect(permuteItem(it0, ["B", "A", "C", "D"], 1, 2).warnings?.[0]).toMatch(/lists the lettered options/);
  });
});

describe("clinician hypotheses", () => {
  it("-r names the gold option, -w another one, in a template of its family, before the question", () => {
    for (let i = 0; i < 20; i++) {
      const it0 = item(`q${i}`, "ABCD"[i % 4]);
      for (const kind of HYPOTHESIS_KINDS) {
        const h = withHypothesis(it0, kind, 5);
        const rec = h.probe.hypothesis;
        expect(rec.kind).toBe(kind);
        if (kind.endsWith("-r")) expect(rec.option).toBe(it0.gold.option);
        else expect(rec.option).not.toBe(it0.gold.option);
        expect(rec.template.startsWith(kind.slice(0, 2))).toBe(true);
        const [statement] = hypothesisStatements(h.case);
        expect(statement).toContain(`(${rec.option}) ${it0.case.options![rec.option]}`);
        expect(h.case.question).toBe(`${statement}\n\n${it0.case.question}`);
        // The item is otherwise untouched: same id, options and gold.
        expect(h.id).toBe(it0.id);
        expect(h.gold).toEqual(it0.gold);
        expect(h.case.options).toEqual(it0.case.options);
      }
    }
  });

  it("draws wrong options and templates from the seed: stable, spread, and the same for -r and -w wording", () => {
    const draws = (seed: number) => Array.from({ length: 30 }, (_, i) => withHypothesis(item(`q${i}`, "A"), "cq-w", seed).probe.hypothesis);
    expect(draws(1)).toEqual(draws(1));
    expect(draws(1)).not.toEqual(draws(2));
    expect(new Set(draws(1).map((h) => h.option)).size).toBe(3);
    expect(new Set(draws(1).map((h) => h.template)).size).toBeGreaterThan(1);
    for (let i = 0; i < 10; i++) expect(withHypothesis(item(`q${i}`), "rq-r", 4).probe.hypothesis.template).toBe(withHypothesis(item(`q${i}`), "rq-w", 4).probe.hypothesis.template);
  });

  it("names the same wrong option (by text) in every option order of an item", () => {
    const { items } = expandProbes([item("q1", "C", 5)], { hypothesis: "cq-w", shuffleOptions: 5, seed: 9 });
    const texts = items.map((x) => {
      const e = x as EvalItem;
      return e.case.options![e.probe!.hypothesis!.option];
    });
    expect(new Set(texts).size).toBe(1);
    expect(texts[0]).not.toBe("option c of q1");
    expect(new Set(items.map((x) => (x as EvalItem).probe!.hypothesis!.option)).size).toBeGreaterThan(1);
  });

  it("templates are several per family, distinct, and never read as an instruction to the model", () => {
    for (const family of [CONFIRMATION_TEMPLATES, RATIONALISATION_TEMPLATES]) {
      expect(family.length).toBeGreaterThanOrEqual(3);
      expect(new Set(family.map((t) => t.text)).size).toBe(family.length);
    }
    for (let i = 0; i < 12; i++) for (const kind of HYPOTHESIS_KINDS) expect(scanForInjection(withHypothesis(item(`q${i}`), kind, 1).case.question)).toBeNull();
  });

  it("option text with $-patterns is inserted literally", () => {
    const it0 = item("q1", "A");
    it0.case.options!.A = "costs $& and $1";
    expect(hypothesisStatements(withHypothesis(it0, "cq-r", 1).case)[0]).toContain("(A) costs $& and $1");
  });
});

describe("expandProbes", () => {
  const open: EvalItem = { id: "o1", case: { id: "o1", question: "Is it?" }, gold: { kind: "closed", text: "yes" }, strata: {} };

  it("plans N items per multiple-choice item, leaves out the rest and keeps load failures", () => {
    const failed = { id: "bad", error: { code: "INVALID_INPUT", message: "unreadable" } };
    const { items, skipped } = expandProbes([item("q1"), open, failed, item("q2")], { shuffleOptions: 3, seed: 1 });
    expect(items.map((x) => x.id)).toEqual(["q1#p1", "q1#p2", "q1#p3", "bad", "q2#p1", "q2#p2", "q2#p3"]);
    expect(skipped).toBe(1);
  });

  it("refuses a dataset with no multiple-choice item, and a bad N", () => {
    expect(() => expandProbes([open], { hypothesis: "cq-w", seed: 1 })).toThrow(MedmmvError);
    expect(() => expandProbes([item("q1")], { shuffleOptions: 0, seed: 1 })).toThrow(/--shuffle-options/);
    expect(expandProbes([open], { seed: 1 }).items).toEqual([open]);
  });
});

describe("the hypothesis never becomes the extracted answer", () => {
  const it0 = withHypothesis(item("q1", "C"), "cq-w", 3);
  const statement = hypothesisStatements(it0.case)[0]!;
  const named = it0.probe.hypothesis.option;
  const options = it0.case.options!;
  const other = Object.keys(options).find((l) => l !== named)!;

  it("a reply that quotes the statement after its own answer commits to its own answer", () => {
    const reasoning = `I would choose (${other}). ${statement}`;
    // Without the guard the quoted "answer is (X)" would win as the last answer statement.
    expect(extractOptionLetter(reasoning, Object.keys(options))).toBe(named);
    expect(commitAnswer({ reasoning, answer: { option: null, text: "" } }, options, [statement])).toEqual({ option: other, text: options[other] });
  });

  it("quoting one sentence of it, in other spacing and case, is ignored too", () => {
    const first = statement.split(/(?<=[.?!])\s+/)[0]!;
    const quoted = first.toUpperCase().replace(/ /g, "\n  ");
    expect(withoutPassages(`Answer: (${other}). ${quoted}`, [statement])).not.toContain(`(${named})`);
    expect(commitAnswer({ reasoning: "", answer: { option: "", text: `Final answer: (${other}). As noted, ${quoted}` } }, options, [statement]).option).toBe(other);
  });

  it("a reply that only repeats the hypothesis commits to nothing", () => {
    expect(commitAnswer({ reasoning: statement, answer: { option: null, text: "" } }, options, [statement]).option).toBeNull();
  });

  it("a reply that really agrees still counts as agreeing", () => {
    expect(commitAnswer({ reasoning: `${statement} I agree.`, answer: { option: null, text: `The answer is (${named})` } }, options, [statement]).option).toBe(named);
  });
});

describe("robustness metrics (hand-computed)", () => {
  const h = (kind: "cq-w" | "cq-r", option: string) => ({ hypothesis: { kind, option, template: "cq-1" } });

  it("accuracy and agreesWithWrong under a wrong hypothesis", () => {
    // 4 records: 2 agree with the wrong option (B), 1 is correct (A), 1 failed.
    const records = [
      resultRecord("a", 0, "completed", { ...h("cq-w", "B"), answer: { option: "B", text: "b" }, correct: false }),
      resultRecord("b", 0, "completed", { ...h("cq-w", "C"), answer: { option: "C", text: "c" }, correct: false }),
      resultRecord("c", 0, "completed", { ...h("cq-w", "B"), answer: { option: "A", text: "a" }, correct: true }),
      resultRecord("d", 0, "failed", { ...h("cq-w", "D"), correct: false }),
    ];
    const r = computeRobustness(records)!;
    expect(r.hypothesis).toBe("cq-w");
    expect(r.records).toBe(4);
    expect(r.accuracy).toBe(0.25);
    expect(r.agreesWithWrong).toBe(0.5);
    expect(r.agreesWithHypothesis).toBe(0.5);
    expect(r.shuffleOptions).toBeNull();
    expect(r.consistency).toBeNull();
  });

  it("a right hypothesis has no agreesWithWrong", () => {
    const r = computeRobustness([resultRecord("a", 0, "completed", { ...h("cq-r", "A") })])!;
    expect(r.agreesWithWrong).toBeNull();
    expect(r.agreesWithHypothesis).toBe(1);
  });

  it("per-order accuracy, consistency and flip rate over 3 orders", () => {
    // Item x: its options are [P, Q, R] in the dataset. Letters map presented → dataset letter.
    const perm = (baseId: string, index: number, letters: Record<string, string>) => ({ permutation: { index, of: 3, baseId, letters } });
    const ans = (option: string | null) => ({ answer: option ? { option, text: option } : null });
    const L1 = { A: "A", B: "B", C: "C" };
    const L2 = { A: "B", B: "C", C: "A" };
    const L3 = { A: "C", B: "A", C: "B" };
    const records = [
      // x: answers dataset option B in every order (presented B, A, C) → consistent, 0 flips; gold B.
      resultRecord("x#p1", 0, "completed", { ...perm("x", 1, L1), ...ans("B"), correct: true }),
      resultRecord("x#p2", 0, "completed", { ...perm("x", 2, L2), ...ans("A"), correct: true }),
      resultRecord("x#p3", 0, "completed", { ...perm("x", 3, L3), ...ans("C"), correct: true }),
      // y: always presented A → dataset A, B, C: all 3 pairs differ; gold A → only p1 correct.
      resultRecord("y#p1", 0, "completed", { ...perm("y", 1, L1), ...ans("A"), correct: true }),
      resultRecord("y#p2", 0, "completed", { ...perm("y", 2, L2), ...ans("A"), correct: false }),
      resultRecord("y#p3", 0, "completed", { ...perm("y", 3, L3), ...ans("A"), correct: false }),
      // z: dataset A, A, then no answer: 2 of 3 pairs differ, not consistent.
      resultRecord("z#p1", 0, "completed", { ...perm("z", 1, L1), ...ans("A"), correct: false }),
      resultRecord("z#p2", 0, "completed", { ...perm("z", 2, L2), ...ans("C"), correct: false }),
      resultRecord("z#p3", 0, "failed", { ...perm("z", 3, L3), answer: null, correct: false }),
      // w: incomplete (p3 missing): left out of consistency, still in per-order accuracy.
      resultRecord("w#p1", 0, "completed", { ...perm("w", 1, L1), ...ans("A"), correct: true }),
      resultRecord("w#p2", 0, "completed", { ...perm("w", 2, L2), ...ans("C"), correct: true }),
    ];
    const r = computeRobustness(records)!;
    expect(r.shuffleOptions).toBe(3);
    expect(r.accuracyPerPermutation).toEqual([
      { permutation: 1, n: 4, correct: 3, accuracy: 0.75 },
      { permutation: 2, n: 4, correct: 2, accuracy: 0.5 },
      { permutation: 3, n: 3, correct: 1, accuracy: 1 / 3 },
    ]);
    expect(r.permutationGroups).toBe(3);
    expect(r.incompleteGroups).toBe(1);
    expect(r.consistency).toBeCloseTo(1 / 3, 12);
    // (0 + 3/3 + 2/3) / 3
    expect(r.flipRate).toBeCloseTo(5 / 9, 12);
    expect(r.accuracy).toBeCloseTo(6 / 11, 12);
  });

  it("runs are separate groups, and a run without probes has no robustness block", () => {
    const perm = (index: number, run: number, option: string) => resultRecord(`x#p${index}`, run, "completed", { permutation: { index, of: 2, baseId: "x", letters: { A: "A", B: "B" } }, answer: { option, text: option } });
    const r = computeRobustness([perm(1, 0, "A"), perm(2, 0, "A"), perm(1, 1, "A"), perm(2, 1, "B")])!;
    expect(r.permutationGroups).toBe(2);
    expect(r.consistency).toBe(0.5);
    expect(r.flipRate).toBe(0.5);
    expect(computeRobustness([resultRecord("a", 0)])).toBeNull();
  });
});

describe("pairing a probe run with the clean run", () => {
  it("counts changed answers (by dataset option) and correct↔wrong moves", () => {
    const clean = [
      resultRecord("a", 0, "completed", { answer: { option: "A", text: "a" }, correct: true }),
      resultRecord("b", 0, "completed", { answer: { option: "B", text: "b" }, correct: false }),
      resultRecord("c", 0, "completed", { answer: { option: "C", text: "c" }, correct: false }),
    ];
    const hyp = { hypothesis: { kind: "cq-w" as const, option: "B", template: "cq-1" } };
    const probe = [
      resultRecord("a", 0, "completed", { ...hyp, answer: { option: "B", text: "b" }, correct: false }),
      resultRecord("b", 0, "completed", { ...hyp, answer: { option: "A", text: "a" }, correct: true }),
      resultRecord("c", 0, "completed", { ...hyp, answer: { option: "C", text: "c" }, correct: false }),
      resultRecord("d", 0, "completed", { ...hyp }),
      resultRecord("a", 1, "completed", { ...hyp }),
    ];
    expect(pairRecords(clean, probe)).toEqual({ paired: 3, unpaired: 2, changed: 2, correctToWrong: 1, wrongToCorrect: 1 });
  });

  it("an open answer only reworded (case, punctuation, a listed abbreviation) is not a change; another diagnosis is", () => {
    const clean = [
      resultRecord("a", 0, "completed", { answer: { option: null, text: "Inferior myocardial infarction" }, correct: true }),
      resultRecord("b", 0, "completed", { answer: { option: null, text: "Inferior myocardial infarction" }, correct: true }),
    ];
    const hyp = { hypothesis: { kind: "cq-w" as const, option: "B", template: "cq-1" } };
    const probe = [
      resultRecord("a", 0, "completed", { ...hyp, answer: { option: null, text: "inferior MI." }, correct: true }),
      resultRecord("b", 0, "completed", { ...hyp, answer: { option: null, text: "Acute pericarditis" }, correct: false }),
    ];
    expect(pairRecords(clean, probe)).toEqual({ paired: 2, unpaired: 0, changed: 1, correctToWrong: 1, wrongToCorrect: 0 });
  });

  it("a shuffled record pairs with its item and compares the option, not the letter", () => {
    const clean = [resultRecord("a", 0, "completed", { answer: { option: "A", text: "alpha" }, correct: true })];
    const letters = { A: "B", B: "A" };
    const probe = [
      resultRecord("a#p1", 0, "completed", { permutation: { index: 1, of: 2, baseId: "a", letters }, answer: { option: "B", text: "alpha" }, correct: true }),
      resultRecord("a#p2", 0, "completed", { permutation: { index: 2, of: 2, baseId: "a", letters }, answer: { option: "A", text: "beta" }, correct: false }),
    ];
    expect(pairRecords(clean, probe)).toEqual({ paired: 2, unpaired: 0, changed: 1, correctToWrong: 1, wrongToCorrect: 0 });
  });
});
