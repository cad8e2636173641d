import { describe, expect, it } from "vitest";
import { loadPathway } from "../../../src/core/pathways/load-pathway.js";
import { probedQuestion, turnStatement } from "../../../src/eval/probes/conversation-hypothesis.js";

const bm = loadPathway("bone-marrow");
/** The AML record's five turns in the standard order. */
const TURNS = [
  { question: "Is the image of sufficient quality?", step: "image-quality", expected: "high" },
  { question: "Is the region suitable for cell analysis?", step: "cell-quality", expected: "adequate" },
  { question: "Are there abnormalities?", step: "abnormality", expected: "abnormal" },
  { question: "Which cell type is proliferating?", step: "proliferation", expected: "blasts" },
  { question: "What is the diagnosis?", step: "diagnosis", expected: "aml" },
];

describe("probes on pathway conversations, turn by turn (Dr-LLaVA's confirmation scripts)", () => {
  it("CQ states an answer to the same question: the gold category (-r) or another of the step (-w)", () => {
    const r = turnStatement("cq-r", TURNS, 4, bm, 1, "test1\u0000si")!;
    expect(r).toMatchObject({ kind: "cq-r", step: "diagnosis", category: "aml" });
    expect(r.statement).toContain("Acute myeloid leukemia");
    for (let seed = 1; seed <= 20; seed++) {
      const w = turnStatement("cq-w", TURNS, 4, bm, seed, "test1\u0000si")!;
      expect(w.step).toBe("diagnosis");
      expect(["healthy", "mm", "inconclusive"]).toContain(w.category);
    }
  });

  it("RQ states the previous step's conclusion, right or deliberately wrong, before the next step's question", () => {
    expect(turnStatement("rq-r", TURNS, 0, bm, 1, "k")).toBeNull();
    const r = turnStatement("rq-r", TURNS, 3, bm, 1, "k")!;
    expect(r).toMatchObject({ step: "abnormality", category: "abnormal" });
    expect(r.statement).toContain("Are there abnormalities?");
    const w = turnStatement("rq-w", TURNS, 3, bm, 1, "k")!;
    expect(w.step).toBe("abnormality");
    expect(["normal", "inadequate"]).toContain(w.category);
    const asked = probedQuestion(TURNS[3]!.question, w);
    expect(asked.endsWith("\n\nWhich cell type is proliferating?")).toBe(true);
    expect(asked.startsWith(w.statement)).toBe(true);
  });

  it("the same seed and key give the same statements; -r and -w share a wording", () => {
    const a = turnStatement("rq-w", TURNS, 2, bm, 5, "test2\u0000df")!;
    expect(turnStatement("rq-w", TURNS, 2, bm, 5, "test2\u0000df")).toEqual(a);
    const right = turnStatement("rq-r", TURNS, 2, bm, 5, "test2\u0000df")!;
    const template = (s: string) => s.replace(/: [^:]*\.$/, "");
    expect(template(right.statement)).toBe(template(a.statement));
  });
});
