import { describe, expect, it } from "vitest";
import { completeTrace, parseTrace, renderTrace, validateStages, validateTrace } from "../../../src/eval/stagewise/trace-parser.js";

const full = "[Visual Recognition]\nA mass in the right upper lobe.\n\n[Knowledge Recall]\nSpiculated masses suggest carcinoma.\n\n[Reasoning]\nThe mass in a smoker points to cancer.\n[Answer] C. Lung cancer";

describe("parseTrace (ClinHallu's rules, reference §1.2)", () => {
  it("splits the three stages and takes the answer from the reasoning", () => {
    expect(parseTrace(full)).toEqual({
      visual: "A mass in the right upper lobe.",
      knowledge: "Spiculated masses suggest carcinoma.",
      reasoning: "The mass in a smoker points to cancer.",
      answer: "C. Lung cancer",
    });
    expect(validateTrace(parseTrace(full))).toEqual({ valid: true, reason: "OK" });
  });

  it("no header at all → null; text before the first header is ignored", () => {
    expect(parseTrace("The answer is C.")).toBeNull();
    expect(validateTrace(null)).toEqual({ valid: false, reason: "Parsing returned None" });
    expect(parseTrace("Sure! Here it is.\n" + full)?.visual).toBe("A mass in the right upper lobe.");
  });

  it("a repeated header: the later content wins", () => {
    const t = parseTrace("[Visual Recognition]\nfirst draft here\n[Knowledge Recall]\nsome knowledge text\n[Visual Recognition]\nsecond draft wins\n[Reasoning]\nr r r\n[Answer] yes");
    expect(t?.visual).toBe("second draft wins");
    expect(t?.knowledge).toBe("some knowledge text");
  });

  it("an empty repeat does not erase the earlier stage (an empty stage counts as absent)", () => {
    expect(parseTrace("[Visual Recognition]\nthe first one\n[Visual Recognition]\n   \n[Reasoning] a b c [Answer] no")?.visual).toBe("the first one");
  });

  it("**[Reasoning]** still matches, and the asterisks leak into the text as in ClinHallu", () => {
    const t = parseTrace("[Visual Recognition]\nv v v\n\n[Knowledge Recall]\nk k k\n\n**[Reasoning]**\nr r r\n[Answer] yes");
    expect(t?.knowledge).toBe("k k k\n\n**");
    expect(t?.reasoning).toBe("**\nr r r");
    expect(t?.answer).toBe("yes");
  });

  it("lower-case headers do not match", () => {
    expect(parseTrace("[visual recognition]\nv v v\n[reasoning]\nr [Answer] a")).toBeNull();
  });

  it("the answer may sit on the next line; every [Answer] line leaves the reasoning text", () => {
    const t = parseTrace("[Reasoning]\nthe septum is displaced\n[Answer]\nyes\nmore words [Answer] ignored second");
    expect(t?.answer).toBe("yes");
    expect(t?.reasoning).toBe("the septum is displaced\n\nyes\nmore words");
  });

  it("an [Answer] inside the visual stage is left in place and not used", () => {
    const t = parseTrace("[Visual Recognition]\nlooks like [Answer] B\n[Knowledge Recall]\nk k k\n[Reasoning]\nr r r");
    expect(t?.visual).toBe("looks like [Answer] B");
    expect(t?.answer).toBe("");
    expect(validateTrace(t)).toEqual({ valid: false, reason: "Reasoning step has no [Answer]" });
  });

  it("validity reasons: missing stage, too few words", () => {
    expect(validateTrace(parseTrace("[Visual Recognition]\nv v v\n[Reasoning]\nr r r\n[Answer] x"))).toEqual({ valid: false, reason: "Missing required step: [Knowledge Recall]" });
    expect(validateTrace(parseTrace("[Visual Recognition]\nv v\n[Knowledge Recall]\nk k k\n[Reasoning]\nr r r\n[Answer] x"))).toEqual({ valid: false, reason: "Step [Visual Recognition] has insufficient text (< 3 words)" });
  });

  it("missing stages complete as empty; render/parse round-trips", () => {
    const t = completeTrace(parseTrace("[Reasoning]\nr r r\n[Answer] yes"));
    expect(t).toEqual({ visual: "", knowledge: "", reasoning: "r r r", answer: "yes" });
    expect(parseTrace(renderTrace(completeTrace(parseTrace(full))))).toEqual(parseTrace(full));
    expect(validateStages(completeTrace(parseTrace(full)))).toEqual({ valid: true, reason: "OK" });
    expect(validateStages({ visual: "v v v", knowledge: "k k k", reasoning: "r r r", answer: " " }).reason).toBe("Reasoning step has no [Answer]");
  });
});
