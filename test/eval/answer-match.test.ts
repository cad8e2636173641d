import { describe, expect, it } from "vitest";
import { extractOptionLetter, isCorrect, normalizeAnswer, normalizeYesNo } from "../../src/eval/answer-match.js";

const LETTERS = ["A", "B", "C", "D", "E"];

describe("normalizeAnswer", () => {
  it("lowercases, drops punctuation and articles, collapses whitespace", () => {
    expect(normalizeAnswer("  The Left   lung. ")).toBe("left lung");
    expect(normalizeAnswer("An X-ray, of a chest!")).toBe("x ray of chest");
    expect(normalizeAnswer("ＣＴ scan")).toBe("ct scan"); // full-width letters (NFKC)
    expect(normalizeAnswer("...")).toBe("");
  });
});

describe("normalizeYesNo", () => {
  it.each([
    ["Yes.", "yes"],
    ["yes, the lungs are hyperinflated", "yes"],
    ["NO", "no"],
    ["No - there is no cardiomegaly", "no"],
    ["There is no effusion", null],
    ["yes or no", null],
    ["maybe", null],
    ["Yesterday", null],
  ])("%s → %s", (text, want) => {
    expect(normalizeYesNo(text)).toBe(want);
  });
});

describe("isCorrect", () => {
  it("compares choice letters case-insensitively", () => {
    const gold = { kind: "choice" as const, option: "C", text: "Radial" };
    expect(isCorrect({ option: "c", text: "" }, gold)).toBe(true);
    expect(isCorrect({ option: "D", text: "Radial" }, gold)).toBe(false);
    expect(isCorrect(null, gold)).toBe(false);
    // Without a letter, only the option's exact (normalised) text counts.
    expect(isCorrect({ option: null, text: "radial." }, gold)).toBe(true);
    expect(isCorrect({ option: null, text: "radial nerve" }, gold)).toBe(false);
  });

  it("normalises closed yes/no answers", () => {
    const yes = { kind: "closed" as const, text: "yes" };
    expect(isCorrect({ option: null, text: "Yes." }, yes)).toBe(true);
    expect(isCorrect({ option: null, text: "yes, clearly hyperinflated" }, yes)).toBe(true);
    expect(isCorrect({ option: null, text: "No" }, yes)).toBe(false);
    expect(isCorrect({ option: null, text: "It is hyperinflated" }, yes)).toBe(false);
    // A closed item whose answer is not yes/no is graded like an open one.
    expect(isCorrect({ option: null, text: "Left." }, { kind: "closed", text: "left" })).toBe(true);
    expect(isCorrect({ option: null, text: "right" }, { kind: "closed", text: "left" })).toBe(false);
  });

  it("matches open answers exactly after normalisation or by conservative containment", () => {
    const gold = { kind: "open" as const, text: "Pneumothorax" };
    expect(isCorrect({ option: null, text: "pneumothorax." }, gold)).toBe(true);
    expect(isCorrect({ option: null, text: "A right-sided pneumothorax" }, gold)).toBe(true);
    expect(isCorrect({ option: null, text: "no pneumothorax" }, gold)).toBe(false);
    expect(isCorrect({ option: null, text: "pneumonia" }, gold)).toBe(false);
    const long = { kind: "open" as const, text: "soft tissue mass in the region of the terminal ileum with mesenteric lymphadenopathy" };
    expect(isCorrect({ option: null, text: "Soft-tissue mass in the region of the terminal ileum, with mesenteric lymphadenopathy" }, long)).toBe(true);
    expect(isCorrect({ option: null, text: "mass" }, long)).toBe(false);
    expect(isCorrect({ option: null, text: "soft tissue mass in the terminal ileum" }, long)).toBe(false);
    // A long list cannot score by containing the gold somewhere.
    const listy = "heart lung liver kidney spleen pancreas brain bone skin colon stomach bladder gallbladder";
    expect(isCorrect({ option: null, text: listy }, { kind: "open", text: "liver" })).toBe(false);
    expect(isCorrect({ option: null, text: "3" }, { kind: "open", text: "3" })).toBe(true);
    expect(isCorrect({ option: null, text: "" }, { kind: "open", text: "x" })).toBe(false);
  });
});

describe("extractOptionLetter", () => {
  it.each([
    ["The answer is (C).", "C"],
    ["C.", "C"],
    ["**C**", "C"],
    ["(B)", "B"],
    ["Answer: D", "D"],
    ["**Answer:** E", "E"],
    ["Final answer: **D**", "D"],
    ["C. Radial nerve palsy", "C"],
    ["(C) Radial", "C"],
    ["Options A and B are unlikely. The correct answer is D because ...", "D"],
    ["I first thought the answer is B, but on reflection the final answer is E.", "E"],
    ["$\\boxed{A}$", "A"],
    ["Radial nerve injury best explains this, so option C.", "C"],
  ])("%s → %s", (text, want) => {
    expect(extractOptionLetter(text, LETTERS)).toBe(want);
  });

  it.each([
    ["A 27-year-old man has a radial nerve injury."],
    ["The answer is a nerve injury."],
    ["Option A or option B could both fit."],
    ["The answer is F"], // not an offered option
    ["No letter here"],
    [""],
  ])("%s → null", (text) => {
    expect(extractOptionLetter(text, LETTERS)).toBeNull();
  });

  it("only returns offered letters, and handles ten-option sets", () => {
    const ten = ["A", "B", "C", "D", "E", "F", "G", "H", "I", "J"];
    expect(extractOptionLetter("The answer is J", ten)).toBe("J");
    expect(extractOptionLetter("The answer is J", LETTERS)).toBeNull();
    expect(extractOptionLetter("answer: c", LETTERS)).toBeNull();
  });
});
