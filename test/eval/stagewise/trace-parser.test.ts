import { describe, expect, it } from "vitest";
import { completeTrace, parseTrace, renderTrace, validateStages, validateTrace } from "../../../src/eval/stagewise/trace-parser.js";

/**
 * Every parser case with the outcome ClinHallu's own `parse_cot` and `validate_cot` give for it
 * (Python 3, checked case by case against the reference scripts): the parsed stages (null:
 * ClinHallu's None) and the validity verdict with its reason string.
 */
const CASES: Array<{ name: string; trace: string; parsed: Record<string, string> | null; valid: boolean; reason: string }> = [
  {
    name: "the standard layout",
    trace: "[Visual Recognition]\nA mass in the right upper lobe.\n\n[Knowledge Recall]\nSpiculated masses suggest carcinoma.\n\n[Reasoning]\nThe mass in a smoker points to cancer.\n[Answer] C. Lung cancer",
    parsed: {"visual": "A mass in the right upper lobe.", "knowledge": "Spiculated masses suggest carcinoma.", "reasoning": "The mass in a smoker points to cancer.", "answer": "C. Lung cancer"},
    valid: true,
    reason: "OK",
  },
  {
    name: "the answer on the line after [Answer]",
    trace: "[Visual Recognition]\nA mass in the right upper lobe.\n[Knowledge Recall]\nSpiculated masses suggest carcinoma.\n[Reasoning]\nThe mass in a smoker points to cancer.\n[Answer]\nC. Lung cancer",
    parsed: {"visual": "A mass in the right upper lobe.", "knowledge": "Spiculated masses suggest carcinoma.", "reasoning": "The mass in a smoker points to cancer.", "answer": "C. Lung cancer"},
    valid: true,
    reason: "OK",
  },
  {
    name: "the issue's case: reasoning 'Thus' once the answer line is taken out",
    trace: "[Visual Recognition]\nA mass in the right upper lobe.\n[Knowledge Recall]\nSpiculated masses suggest carcinoma.\n[Reasoning]\nThus\n[Answer]\nC. Lung cancer",
    parsed: {"visual": "A mass in the right upper lobe.", "knowledge": "Spiculated masses suggest carcinoma.", "reasoning": "Thus", "answer": "C. Lung cancer"},
    valid: false,
    reason: "Step [Reasoning] has insufficient text (< 3 words)",
  },
  {
    name: "a bare [Answer] with nothing after it stays in the text",
    trace: "[Visual Recognition]\nv v v\n[Knowledge Recall]\nk k k\n[Reasoning]\nr r r\n[Answer]",
    parsed: {"visual": "v v v", "knowledge": "k k k", "reasoning": "r r r\n[Answer]", "answer": ""},
    valid: false,
    reason: "Reasoning step has no [Answer]",
  },
  {
    name: "a reasoning stage holding only its answer: present, too short",
    trace: "[Visual Recognition]\nv v v\n[Knowledge Recall]\nk k k\n[Reasoning]\n[Answer] C",
    parsed: {"visual": "v v v", "knowledge": "k k k", "reasoning": "", "answer": "C"},
    valid: false,
    reason: "Step [Reasoning] has insufficient text (< 3 words)",
  },
  {
    name: "CRLF line ends",
    trace: "[Visual Recognition]\r\nv v v\r\n[Knowledge Recall]\r\nk k k\r\n[Reasoning]\r\nr r r\r\n[Answer] C. Lung cancer\r\n",
    parsed: {"visual": "v v v", "knowledge": "k k k", "reasoning": "r r r", "answer": "C. Lung cancer"},
    valid: true,
    reason: "OK",
  },
  {
    name: "blank lines between [Answer] and the answer",
    trace: "[Visual Recognition]\nv v v\n[Knowledge Recall]\nk k k\n[Reasoning]\nr r r\n[Answer]\n\n   \nC. Lung cancer\nmore after",
    parsed: {"visual": "v v v", "knowledge": "k k k", "reasoning": "r r r\n\nmore after", "answer": "C. Lung cancer"},
    valid: true,
    reason: "OK",
  },
  {
    name: "U+001C\u2013U+001F are whitespace to Python",
    trace: "[Visual Recognition]\u001cv\u001dv\u001ev\u001f[Knowledge Recall] k k k [Reasoning] r r r [Answer] C",
    parsed: {"visual": "v\u001dv\u001ev", "knowledge": "k k k", "reasoning": "r r r", "answer": "C"},
    valid: true,
    reason: "OK",
  },
  {
    name: "[Answer] followed by a space and a line end: an empty answer",
    trace: "[Visual Recognition]\nv v v\n[Knowledge Recall]\nk k k\n[Reasoning]\nr r r\n[Answer] \n",
    parsed: {"visual": "v v v", "knowledge": "k k k", "reasoning": "r r r\n[Answer]", "answer": ""},
    valid: false,
    reason: "Reasoning step has no [Answer]",
  },
  {
    name: "two [Answer] lines: the first answers, both leave the text",
    trace: "[Visual Recognition]\nv v v\n[Knowledge Recall]\nk k k\n[Reasoning]\nr r r\n[Answer] B\nsecond thoughts\n[Answer] C",
    parsed: {"visual": "v v v", "knowledge": "k k k", "reasoning": "r r r\n\nsecond thoughts", "answer": "B"},
    valid: true,
    reason: "OK",
  },
  {
    name: "no header at all",
    trace: "The answer is C.",
    parsed: null,
    valid: false,
    reason: "Parsing returned None",
  },
  {
    name: "headers with nothing under them",
    trace: "[Visual Recognition]\n\n[Reasoning]   \n",
    parsed: null,
    valid: false,
    reason: "Parsing returned None",
  },
  {
    name: "a repeated header: the later content wins",
    trace: "[Visual Recognition]\nfirst draft here\n[Knowledge Recall]\nsome knowledge text\n[Visual Recognition]\nsecond draft wins\n[Reasoning]\nr r r\n[Answer] yes",
    parsed: {"visual": "second draft wins", "knowledge": "some knowledge text", "reasoning": "r r r", "answer": "yes"},
    valid: true,
    reason: "OK",
  },
  {
    name: "**[Reasoning]**: the asterisks stay in the text",
    trace: "[Visual Recognition]\nv v v\n\n[Knowledge Recall]\nk k k\n\n**[Reasoning]**\nr r r\n[Answer] yes",
    parsed: {"visual": "v v v", "knowledge": "k k k\n\n**", "reasoning": "**\nr r r", "answer": "yes"},
    valid: true,
    reason: "OK",
  },
  {
    name: "NEL and NBSP are whitespace",
    trace: "[Visual Recognition]\u0085one\u00a0two three\n[Knowledge Recall]\nk k k\n[Reasoning]\nr r r\n[Answer]\u0085C",
    parsed: {"visual": "one\u00a0two three", "knowledge": "k k k", "reasoning": "r r r", "answer": "C"},
    valid: true,
    reason: "OK",
  },
  {
    name: "a BOM is not whitespace to Python",
    trace: "[Visual Recognition] one\ufefftwo three\n[Knowledge Recall]\nk k k\n[Reasoning]\nr r r\n[Answer] C",
    parsed: {"visual": "one\ufefftwo three", "knowledge": "k k k", "reasoning": "r r r", "answer": "C"},
    valid: false,
    reason: "Step [Visual Recognition] has insufficient text (< 3 words)",
  },
  {
    name: "lower-case headers do not match",
    trace: "[visual recognition]\nv v v\n[reasoning]\nr [Answer] a",
    parsed: null,
    valid: false,
    reason: "Parsing returned None",
  },
  {
    name: "an [Answer] in the visual stage is not an answer",
    trace: "[Visual Recognition]\nlooks like [Answer] B\n[Knowledge Recall]\nk k k\n[Reasoning]\nr r r",
    parsed: {"visual": "looks like [Answer] B", "knowledge": "k k k", "reasoning": "r r r", "answer": ""},
    valid: false,
    reason: "Reasoning step has no [Answer]",
  },
  {
    name: "validation runs stage by stage: a short stage before a missing one",
    trace: "[Visual Recognition]\nv v v\n[Knowledge Recall]\nk k\n[Reasoning]\nr r r\n[Answer] x",
    parsed: {"visual": "v v v", "knowledge": "k k", "reasoning": "r r r", "answer": "x"},
    valid: false,
    reason: "Step [Knowledge Recall] has insufficient text (< 3 words)",
  },
  {
    name: "a missing stage",
    trace: "[Visual Recognition]\nv v\n[Reasoning]\nr r r\n[Answer] x",
    parsed: {"visual": "v v", "reasoning": "r r r", "answer": "x"},
    valid: false,
    reason: "Step [Visual Recognition] has insufficient text (< 3 words)",
  },
  {
    name: "a header after [Answer] ends the reasoning",
    trace: "[Reasoning] r r r [Answer]\n[Visual Recognition] v v v\n[Knowledge Recall] k k k",
    parsed: {"reasoning": "r r r [Answer]", "answer": "", "visual": "v v v", "knowledge": "k k k"},
    valid: false,
    reason: "Reasoning step has no [Answer]",
  },
  {
    name: "text before the first header is ignored",
    trace: "Sure! Here it is.\n[Visual Recognition]\nv v v\n[Knowledge Recall]\nk k k\n[Reasoning]\nr r r [Answer] C.",
    parsed: {"visual": "v v v", "knowledge": "k k k", "reasoning": "r r r", "answer": "C."},
    valid: true,
    reason: "OK",
  },
  {
    name: "an empty repeat does not erase the earlier stage",
    trace: "[Visual Recognition]\nthe first one\n[Visual Recognition]\n   \n[Reasoning] a b c [Answer] no",
    parsed: {"visual": "the first one", "reasoning": "a b c", "answer": "no"},
    valid: false,
    reason: "Missing required step: [Knowledge Recall]",
  },
];

describe("parseTrace and validateTrace give ClinHallu's outcome for every parser case", () => {
  it.each(CASES)("$name", ({ trace, parsed, valid, reason }) => {
    const got = parseTrace(trace);
    expect(got).toEqual(parsed);
    expect(validateTrace(got)).toEqual({ valid, reason });
  });
});

describe("completeTrace, renderTrace and validateStages", () => {
  const full = CASES[0]!.trace;
  it("missing stages complete as empty; render/parse round-trips", () => {
    expect(completeTrace(parseTrace("[Reasoning]\nr r r\n[Answer] yes"))).toEqual({ visual: "", knowledge: "", reasoning: "r r r", answer: "yes" });
    expect(parseTrace(renderTrace(completeTrace(parseTrace(full))))).toEqual(parseTrace(full));
    expect(validateStages(completeTrace(parseTrace(full)))).toEqual({ valid: true, reason: "OK" });
    expect(validateStages({ visual: "v v v", knowledge: "k k k", reasoning: "r r r", answer: " " }).reason).toBe("Reasoning step has no [Answer]");
  });

  it("validateStages counts words the way Python's split() does", () => {
    expect(validateStages({ visual: "v\u001cv\u001dv", knowledge: "k k k", reasoning: "r r r", answer: "C" })).toEqual({ valid: true, reason: "OK" });
    expect(validateStages({ visual: "one\ufefftwo three", knowledge: "k k k", reasoning: "r r r", answer: "C" }).valid).toBe(false);
  });
});
