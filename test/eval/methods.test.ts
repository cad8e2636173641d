import { describe, expect, it } from "vitest";
import { commitAnswer } from "../../src/eval/methods/cot.js";
import { majority, voteKey } from "../../src/eval/methods/self-consistency.js";

const OPTIONS = { A: "Pericarditis", B: "Inferior STEMI", C: "Aortic dissection" };
const cot = (option: string | null, text: string, reasoning = "Reasoning.") => ({ reasoning, answer: { option, text } });

describe("commitAnswer (CoT replies onto options)", () => {
  it("takes a valid option letter in any dress", () => {
    expect(commitAnswer(cot("B", "Inferior STEMI"), OPTIONS)).toEqual({ option: "B", text: "Inferior STEMI" });
    expect(commitAnswer(cot("(c)", "whatever"), OPTIONS)).toEqual({ option: "C", text: "Aortic dissection" });
  });

  it("falls back to a letter the text, then the reasoning, commits to", () => {
    expect(commitAnswer(cot(null, "B. Inferior STEMI"), OPTIONS)).toEqual({ option: "B", text: "Inferior STEMI" });
    expect(commitAnswer(cot("Z", "see reasoning", "The ST elevation in II, III, aVF: the answer is (B)."), OPTIONS)).toEqual({ option: "B", text: "Inferior STEMI" });
  });

  it("keeps the text when no letter is committed to, and open answers as given", () => {
    expect(commitAnswer(cot(null, "myocardial infarction", "Could be (A) or (B)."), OPTIONS)).toEqual({ option: null, text: "myocardial infarction" });
    expect(commitAnswer(cot("A", "  yes "), undefined)).toEqual({ option: null, text: "yes" });
  });
});

describe("self-consistency vote", () => {
  it("keys: letters, normalised yes/no, normalised open text", () => {
    expect(voteKey({ option: "B", text: "x" })).toBe("B");
    expect(voteKey({ option: null, text: "Yes, the lungs are hyperinflated." })).toBe("yes");
    expect(voteKey({ option: null, text: "The Left Lung." })).toBe("left lung");
    expect(voteKey({ option: null, text: "Inferior MI" })).toBe(voteKey({ option: null, text: "inferior myocardial infarction." }));
    expect(voteKey({ option: null, text: "..." })).toBeNull();
  });

  it("majority with ties to the earliest first vote; failed samples do not vote", () => {
    expect(majority(["A", "B", "B", null, "A", "B"])).toBe("B");
    expect(majority(["C", "A", "A", "C"])).toBe("C");
    expect(majority([null, "A", null])).toBe("A");
    expect(majority([null, null])).toBeNull();
  });
});
