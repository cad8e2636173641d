import { describe, expect, it } from "vitest";
import { labelAnswer } from "../../../src/core/pathways/labeller.js";
import { loadPathway } from "../../../src/core/pathways/load-pathway.js";
import { answerSequenceIssue, checkAnswerSequence, checkConsistency, type LabelledAnswer } from "../../../src/core/pathways/consistency.js";
import type { PathwayStep } from "../../../src/core/contracts/pathway.js";

const bm = loadPathway("bone-marrow");
const step = (id: string): PathwayStep => bm.steps.find((s) => s.id === id)!;
const label = (stepId: string, text: string) => labelAnswer(text, step(stepId)).category;

/** Dr-LLaVA Table B.2, row by row: step, category id, the table's keywords. */
const TABLE_B2: Array<[string, string, string[]]> = [
  ["image-quality", "high", ["effective", "appropriate", "suitable", "sufficient", "optimal"]],
  ["image-quality", "low", ["not", "no", "inadequate", "unsuitable"]],
  ["cell-quality", "adequate", ["optimal", "advantageous", "suitable", "adequate", "well", "prime"]],
  ["cell-quality", "blood", ["blood", "RBC"]],
  ["cell-quality", "clot", ["particles"]],
  ["abnormality", "normal", ["normal", "healthy", "no abnormality"]],
  ["abnormality", "abnormal", ["cancer", "disorder", "malignancy"]],
  ["abnormality", "inadequate", ["low", "subpar", "inadequate"]],
  ["proliferation", "blasts", ["myeloblast"]],
  ["proliferation", "plasma-cells", ["plasma cells"]],
  ["proliferation", "none", ["no abnormal", "no proliferation", "normal"]],
  ["proliferation", "inadequate", ["low", "subpar", "inadequate"]],
  ["diagnosis", "healthy", ["no malignancy phenotype", "healthy"]],
  ["diagnosis", "aml", ["acute myeloid leukemia", "AML"]],
  ["diagnosis", "mm", ["multiple myeloma", "MM"]],
  ["diagnosis", "inconclusive", ["low quality", "inadequate"]],
];

describe("labeller: every keyword row of Dr-LLaVA's Table B.2", () => {
  for (const [stepId, category, keywords] of TABLE_B2) {
    for (const kw of keywords) {
      it(`${stepId}: "${kw}" → ${category}`, () => {
        expect(labelAnswer(`Answer: ${kw}.`, step(stepId)).category).toBe(category);
      });
    }
  }

  it("an answer with no keyword is no-match, for every step", () => {
    for (const s of bm.steps) expect(labelAnswer("The picture shows a purple stain.", s).category).toBe("no-match");
  });
});

describe("labeller: answers in ordinary phrasing", () => {
  it.each([
    ["image-quality", "Yes, the image quality is sufficient for a reliable analysis.", "high"],
    ["image-quality", "The image is not suitable for analysis.", "low"],
    ["image-quality", "Image quality is low.", "low"],
    ["cell-quality", "The region is well suited, close to the particles but clear of them.", "adequate"],
    ["cell-quality", "This region is dominated by RBCs.", "blood"],
    ["cell-quality", "The field is mostly blood.", "blood"],
    ["abnormality", "Yes, the cells show a malignancy.", "abnormal"],
    ["proliferation", "Myeloblasts are proliferating (about 40%).", "blasts"],
    ["proliferation", "Plasma cells are increased.", "plasma-cells"],
    ["diagnosis", "The findings are consistent with acute myeloid leukemia.", "aml"],
    ["diagnosis", "This is MM.", "mm"],
    ["diagnosis", "Inconclusive: the sample is of low-quality.", "inconclusive"],
  ])("%s: %s → %s", (stepId, text, category) => {
    expect(label(stepId, text)).toBe(category);
  });
});

describe("labeller: negation", () => {
  it('"no abnormality" is normal, not abnormal', () => {
    expect(label("abnormality", "There is no abnormality in these cells.")).toBe("normal");
  });
  it('"not adequate" does not count as adequate', () => {
    const r = labelAnswer("The region is not adequate for cell analysis.", step("cell-quality"));
    expect(r.category).toBe("no-match");
    expect(r.negated.map((h) => h.keyword)).toEqual(["adequate"]);
  });
  it('"cannot be assessed" negates the keyword before it and says the material is inadequate; "cannot assess" negates the one after', () => {
    expect(labelAnswer("Malignancy cannot be assessed on this slide.", step("abnormality"))).toMatchObject({ category: "inadequate", negated: [{ keyword: "malig*", text: "malignancy" }] });
    expect(label("abnormality", "We cannot assess malignancy here.")).toBe("no-match");
  });
  it("negation phrases, post-negation and the clause boundary", () => {
    // A negated finding counts for the category that its negation means (`negatedKeywords`).
    expect(label("abnormality", "There is no evidence of malignancy.")).toBe("normal");
    expect(label("abnormality", "Malignancy is not seen.")).toBe("normal");
    expect(label("abnormality", "Absence of cancer; the cells look healthy.")).toBe("normal");
    expect(label("proliferation", "Myeloblasts are not increased, but plasma cells are.")).toBe("plasma-cells");
    expect(label("diagnosis", "This is not multiple myeloma; it is acute myeloid leukemia.")).toBe("aml");
  });
  it("a category's own negation cues count too", () => {
    const custom: PathwayStep = {
      id: "x",
      question: "?",
      categories: [{ id: "present", label: "Present", keywords: ["effusion"], negations: ["resolved"] }],
    };
    expect(labelAnswer("An effusion is present.", custom).category).toBe("present");
    expect(labelAnswer("Resolved effusion.", custom).category).toBe("no-match");
  });
});

describe("labeller: two categories named at once are ambiguous; a bare cue word is weak", () => {
  it("a keyword beats a bare cue word or a negated finding of another category", () => {
    // "no" (low) is only a cue word; "suitable" (high) is a finding.
    expect(label("image-quality", "Suitable: no artefacts at all.")).toBe("high");
    // "not AML" would mean healthy on its own; multiple myeloma, said outright, wins.
    expect(label("diagnosis", "Not leukemia: this is multiple myeloma.")).toBe("mm");
    expect(labelAnswer("No abnormality.", step("abnormality"))).toMatchObject({ category: "normal" });
    expect(label("abnormality", "No, but there is a malignancy.")).toBe("abnormal");
  });
  it("keywords of two categories give no-match with both named, whatever their length", () => {
    const r = labelAnswer("Normal cells next to cancer cells.", step("abnormality"));
    expect(r.category).toBe("no-match");
    expect(r.ties).toEqual(["normal", "abnormal"]);
    expect(labelAnswer("Either AML or multiple myeloma; cannot tell.", step("diagnosis")).ties).toEqual(["aml", "mm"]);
    // The released code (longest wins) calls this adequate.
    expect(labelAnswer("Near particles, but flooded with blood.", step("cell-quality")).ties).toEqual(["adequate", "blood"]);
  });
  it("a keyword inside a longer keyword does not count on its own", () => {
    expect(label("cell-quality", "The field lies near the particles.")).toBe("adequate");
  });
});

describe("labeller: double negation, hedges, case and inflection", () => {
  it.each([
    ["diagnosis", "AML cannot be excluded.", "aml"],
    ["diagnosis", "Multiple myeloma is not ruled out.", "mm"],
    ["diagnosis", "We cannot rule out acute myeloid leukaemia.", "aml"],
    ["diagnosis", "It is impossible to exclude MM.", "mm"],
    ["diagnosis", "AML was ruled out.", "no-match"],
    ["diagnosis", "Unclear whether this is AML.", "inconclusive"],
    ["diagnosis", "aml", "aml"],
    ["diagnosis", "Findings favour Aml rather than MM.", "aml"],
    ["abnormality", "No abnormalities.", "normal"],
    ["abnormality", "It is unclear if any abnormalities are present.", "no-match"],
    ["cell-quality", "Clotted.", "clot"],
    ["cell-quality", "Numerous rbcs.", "blood"],
    ["proliferation", "Neither blasts nor plasma cells are increased.", "none"],
    ["proliferation", "Myeloblasts proliferating.", "blasts"],
    // A cue after the head noun of an adjective keyword still speaks of it.
    ["abnormality", "Malignant cells are not identified.", "normal"],
    ["proliferation", "Blast cells are not increased.", "none"],
    // A bare yes or no answers the step's question, but only when nothing else is said.
    ["image-quality", "Yes.", "high"],
    ["image-quality", "Yes, but the smear is inadequate.", "low"],
    ["abnormality", "No.", "normal"],
  ])("%s: %s → %s", (stepId, text, category) => {
    expect(label(stepId, text)).toBe(category);
  });
});

describe("labeller: the released code's quirks, fixed", () => {
  it('the substring "no" inside "normal" / "diagnosis" is not a negative image-quality answer', () => {
    // Released _check_quality returns false (low) for both: "no" is a substring of each.
    expect(label("image-quality", "Normal appearance.")).toBe("no-match");
    expect(label("image-quality", "Ready for diagnosis.")).toBe("no-match");
  });
  it('the bare-string "quality" test no longer makes any answer with "no " inconclusive', () => {
    // Released _diagnosis: "no " present and the letters-of-"quality" test true → "inadequate".
    // A reactive (benign) marrow without blast excess is healthy, not inconclusive.
    expect(label("diagnosis", "There is no blast excess; a reactive marrow.")).toBe("healthy");
  });
  it('"mm" inside words or as a unit is not multiple myeloma; "aml" inside a word is not AML', () => {
    expect(label("diagnosis", "Immature cells, 5 mm in the summary.")).toBe("no-match");
    expect(label("diagnosis", "A small amlodipine note.")).toBe("no-match");
  });
  it('"normal" inside "abnormal" is not normal; "malignancy" in "no malignancy phenotype" is healthy', () => {
    expect(label("proliferation", "Abnormal proliferation.")).toBe("no-match");
    expect(label("diagnosis", "No malignancy phenotype is seen.")).toBe("healthy");
  });
  it("the order of rules does not decide: plasma in a negated clause does not beat myeloblasts", () => {
    // Released _detailed_abnormality_reasoning returns "plasma cells" whenever "plasma" occurs.
    expect(label("proliferation", "Myeloblasts proliferate; no plasma cells are increased.")).toBe("blasts");
  });
});

describe("consistency", () => {
  it("a sequence agreeing with one valid path on every labelled step is consistent; no-match is free", () => {
    const r = checkConsistency(bm, { "image-quality": "high", abnormality: "abnormal", proliferation: "no-match", diagnosis: "aml" });
    expect(r).toMatchObject({ consistent: true, matchingPaths: ["aml"], conflictingSteps: [] });
    expect(checkConsistency(bm, {}).matchingPaths).toHaveLength(5);
  });
  it("low image quality then AML is a conflict naming both steps", () => {
    const r = checkConsistency(bm, { "image-quality": "low", abnormality: "inadequate", diagnosis: "aml" });
    expect(r.consistent).toBe(false);
    expect(r.conflictingPairs).toEqual([
      ["image-quality", "diagnosis"],
      ["abnormality", "diagnosis"],
    ]);
    expect(r.conflictingSteps).toEqual(["image-quality", "abnormality", "diagnosis"]);
    expect(r.closest).toEqual({ path: "blood", disagrees: ["diagnosis"] });
  });
  it("a conversation's conflict text names the first answer of each step and how a contradicted step changed", () => {
    const walk: LabelledAnswer[] = [
      { step: "image-quality", category: "high" },
      { step: "cell-quality", category: "adequate" },
      { step: "diagnosis", category: "aml" },
    ];
    const issue = (answers: LabelledAnswer[]) => answerSequenceIssue(bm, answers, checkAnswerSequence(bm, answers));
    // "low" alone fits the blood and clot paths: the conflict is that the step changed.
    const changed = [...walk, { step: "image-quality", category: "low" }];
    expect(issue(changed)).toBe('context-conflict: image-quality was answered high earlier and low later, which no valid path of pathway "bone-marrow" allows');
    // A later no-match turn on a conflicting step labels nothing and does not enter the text.
    expect(issue([...changed, { step: "image-quality", category: "no-match" }])).toBe(issue(changed));
    // Off the pathway and contradicted at once: both are named.
    const both = [...walk, { step: "abnormality", category: "inadequate" }, { step: "diagnosis", category: "mm" }];
    expect(issue(both)).toBe('context-conflict: image-quality = high, cell-quality = adequate, abnormality = inadequate, diagnosis = aml fit no valid path of pathway "bone-marrow"; diagnosis was answered aml earlier and mm later');
  });
});
