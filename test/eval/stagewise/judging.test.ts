import { describe, expect, it } from "vitest";
import { committedAnswer, exactOptionLetter, groundTruthText, leadingOptionLetter, supportContext } from "../../../src/eval/stagewise/judging.js";
import { givenStages } from "../../../src/eval/stagewise/generation.js";

const OPTIONS = { A: "Pneumonia", B: "Tuberculosis", C: "Lung cancer" };

describe("MC answers: a bare letter vs \"letter. text\"", () => {
  it("--letter-shortcut settles only an answer that is exactly a letter, or the letter with its option's text", () => {
    expect(exactOptionLetter("C", OPTIONS)).toBe("C");
    expect(exactOptionLetter("(c).", OPTIONS)).toBe("C");
    expect(exactOptionLetter("C. Lung cancer", OPTIONS)).toBe("C");
    expect(exactOptionLetter("c) LUNG  CANCER.", OPTIONS)).toBe("C");
    // Starts with a letter, names no option: the judge decides (ClinHallu asks the judge for every answer).
    expect(exactOptionLetter("A mass is the most likely finding", { A: "Granuloma", B: "Abscess" })).toBeNull();
    expect(exactOptionLetter("C. Lung cancer or tuberculosis", OPTIONS)).toBeNull();
    expect(exactOptionLetter("D", OPTIONS)).toBeNull();
    expect(exactOptionLetter("C", undefined)).toBeNull();
  });

  it("reads the letter an answer commits to, only among the options", () => {
    expect(leadingOptionLetter("A mass is the most likely finding", { A: "Granuloma" })).toBeNull();
    expect(leadingOptionLetter("C", OPTIONS)).toBe("C");
    expect(leadingOptionLetter("C. Lung cancer", OPTIONS)).toBe("C");
    expect(leadingOptionLetter(" (b) Tuberculosis", OPTIONS)).toBe("B");
    expect(leadingOptionLetter("Cancer of the lung", OPTIONS)).toBeNull();
    expect(leadingOptionLetter("D. Sarcoidosis", OPTIONS)).toBeNull();
    expect(leadingOptionLetter("C", undefined)).toBeNull();
  });

  it("the eval's answer takes the option's own text; open answers stay as written", () => {
    expect(committedAnswer("C", OPTIONS)).toEqual({ option: "C", text: "Lung cancer" });
    expect(committedAnswer("c. lung ca", OPTIONS)).toEqual({ option: "C", text: "Lung cancer" });
    expect(committedAnswer(" glands ", undefined)).toEqual({ option: null, text: "glands" });
    expect(groundTruthText({ kind: "choice", option: "C", text: "Lung cancer" })).toBe("C. Lung cancer");
    expect(groundTruthText({ kind: "closed", text: "yes" })).toBe("yes");
  });
});

describe("replacement inputs and judge context", () => {
  const ref = { visual: "gold v", knowledge: "gold k", reasoning: "gold r", answer: "C" };
  const own = { visual: "own v", knowledge: "own k", reasoning: "own r", answer: "A" };
  it("Rep-V gives gold V; Rep-K the model's own V and gold K; Rep-VK both gold stages", () => {
    expect(givenStages("V", ref, own)).toEqual({ visual: "gold v" });
    expect(givenStages("K", ref, own)).toEqual({ visual: "own v", knowledge: "gold k" });
    expect(givenStages("VK", ref, own)).toEqual({ visual: "gold v", knowledge: "gold k" });
  });

  it("support context: reference and candidate V/K, each only when non-empty", () => {
    expect(supportContext(ref, { ...own, knowledge: " " })).toBe("Reference Visual Recognition: gold v\nReference Knowledge Recall: gold k\nCandidate Visual Recognition: own v");
    expect(supportContext(null, { visual: "", knowledge: "", reasoning: "r", answer: "" })).toBe("No additional support context provided.");
  });
});
