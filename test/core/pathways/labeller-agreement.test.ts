import { describe, expect, it } from "vitest";
import { labelAnswer } from "../../../src/core/pathways/labeller.js";
import { loadPathway } from "../../../src/core/pathways/load-pathway.js";
import { CLINICIAN_PHRASING_ANSWERS } from "./agreement/clinician-phrasing-answers.js";
import { TEMPLATE_STYLE_ANSWERS, type LabelledAnswerCase } from "./agreement/template-style-answers.js";

const bm = loadPathway("bone-marrow");

function misses(set: LabelledAnswerCase[]): string[] {
  return set.flatMap((c) => {
    const r = labelAnswer(c.text, bm.steps.find((s) => s.id === c.step)!);
    return r.category === c.expected ? [] : [`${c.step}: "${c.text}" → ${r.category}${r.ties ? ` (${r.ties.join(" + ")})` : ""}, expected ${c.expected}`];
  });
}

// The agreement sets (docs/evaluation.md#conversations-dr-llava): the share labelled as a clinician would.
describe("labeller agreement with clinicians on Dr-LLaVA's questions", () => {
  it("covers every category of every step in both sets", () => {
    for (const set of [CLINICIAN_PHRASING_ANSWERS, TEMPLATE_STYLE_ANSWERS])
      for (const s of bm.steps) for (const c of s.categories) expect(set.some((x) => x.step === s.id && x.expected === c.id), `${s.id}/${c.id}`).toBe(true);
    expect(CLINICIAN_PHRASING_ANSWERS).toHaveLength(60);
    expect(TEMPLATE_STYLE_ANSWERS).toHaveLength(90);
  });

  it("labels at least 55 of the 60 clinician-phrased answers right", () => {
    const wrong = misses(CLINICIAN_PHRASING_ANSWERS);
    expect(60 - wrong.length, wrong.join("\n")).toBeGreaterThanOrEqual(55);
  });

  it("labels at least 85 of the 90 answers in the style of Dr-LLaVA's templates right", () => {
    const wrong = misses(TEMPLATE_STYLE_ANSWERS);
    expect(90 - wrong.length, wrong.join("\n")).toBeGreaterThanOrEqual(85);
  });
});
