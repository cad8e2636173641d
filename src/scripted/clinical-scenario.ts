import type { Scenario, ScriptedRequest } from "./scripted-openai-server.js";

/**
 * A scripted "clinician" for the scripted OpenAI server: it answers each medmmv agent
 * from what is really in the prompt (the case block, the evidence ids, the claim ids),
 * so the whole pipeline runs over HTTP exactly as against a live model. Knobs decide the
 * rollout answers, how many repairs a path needs, coherence per answer, and faults of
 * content (fabricated quotes, hallucinated evidence ids).
 */
export interface ClinicalScenarioOptions {
  /** Answer of rollout i (cycled). For open questions, free text. Default: first option. */
  rolloutAnswers?: string[];
  /** Or decide from the request (e.g. the eval's gold answer looked up by question). */
  answerFor?: (req: ScriptedRequest, caseText: string) => string;
  /** HD flags a path with this answer for its first N attempts (so it needs N repairs). */
  repairsNeeded?: Record<string, number>;
  /** Auto-repair changes the answer: from → to. */
  repairTo?: Record<string, string>;
  /** Coherence per final answer (default 0.8). */
  coherence?: Record<string, number>;
  /** TextDoctor adds an entity whose quote is not in the case text. */
  fabricateQuote?: boolean;
  /** Make each rollout's reasoning identical for equal answers (default true), so dedupe applies. */
  identicalReasoning?: boolean;
  /**
   * What the equivalence judge knows: wordings that mean the same, one array per meaning
   * (compared case-insensitively). Answers in none of them are grouped by their lower-cased text.
   */
  synonyms?: string[][];
  /** Answer the equivalence judge with this instead (a garbage reply, for tests of the contract). */
  judgeReply?: unknown;
  /** Statements the reply composer adds after its own (e.g. one the detector rejects). */
  extraReplyStatements?: Array<{ text: string; kind: "finding" | "knowledge" | "uncertainty" | "advice" }>;
  /** The detector finds claims containing any of these texts unsupported (no evidence). */
  unsupportedClaims?: string[];
}

/**
 * The equivalence judge by its contract (docs/architecture.md#scores): reads the numbered
 * answers of the prompt ("1. Inferior STEMI") and groups their numbers by meaning.
 */
export function judgeEquivalence(text: string, synonyms: readonly string[][] = []): { groups: number[][]; rationale: string } {
  const block = /<<<MODEL_OUTPUT\n([\s\S]*?)\nMODEL_OUTPUT>>>/.exec(text.slice(text.indexOf("medmmv-agent:")))?.[1] ?? "";
  const answers = [...block.matchAll(/^(\d+)\. (.*)$/gm)].map((m) => ({ n: Number(m[1]), text: m[2]!.trim().toLowerCase() }));
  const meaning = (a: string) => {
    const i = synonyms.findIndex((words) => words.some((w) => w.toLowerCase() === a));
    return i >= 0 ? `synonyms:${i}` : `text:${a}`;
  };
  const groups = new Map<string, number[]>();
  for (const a of answers) groups.set(meaning(a.text), [...(groups.get(meaning(a.text)) ?? []), a.n]);
  return { groups: [...groups.values()], rationale: "Grouped by the diagnosis each answer names." };
}

export const FABRICATED_QUOTE = "patient reports a recent trip to the Amazon basin";

export function caseBlock(text: string): string {
  const m = /<<<CASE\n([\s\S]*?)\nCASE>>>/.exec(text);
  return m ? m[1]! : "";
}

/**
 * Presented letter → option text, in the order a case block lists them. Takes the block
 * (what `caseBlock` returns), not the whole prompt: `caseBlock` of a block is "".
 */
export function optionsOfBlock(block: string): Array<[string, string]> {
  return [...block.matchAll(/^\(([A-Z])\) (.*)$/gm)].map((m) => [m[1]!, m[2]!]);
}

/** The question of a case block (a statement put before it included). */
export function questionOfBlock(block: string): string {
  return /Question:\n([\s\S]*?)(?:\nAnswer options:|\nImages:|$)/.exec(block)?.[1] ?? "";
}

/** The option letters of a prompt's case. */
export function optionLetters(text: string): string[] {
  return optionsOfBlock(caseBlock(text)).map(([letter]) => letter);
}

/** The text of option `letter` of a prompt's case, or the letter itself when there is none. */
export function optionText(text: string, letter: string): string {
  return optionsOfBlock(caseBlock(text)).find(([l]) => l === letter)?.[1] ?? letter;
}

/** Clauses of the case text that can serve as verbatim quotes. */
export function quotableClauses(text: string): string[] {
  const block = caseBlock(text);
  const notes = /Clinical notes:\n([\s\S]*?)\n(?:Question:)/.exec(block)?.[1] ?? "";
  const question = questionOfBlock(block);
  return `${notes}\n${question}`
    .split(/[.;\n]|, /)
    .map((s) => s.trim())
    .filter((s) => s.length >= 8 && s.length <= 160 && !/[‹›]/.test(s))
    .slice(0, 6);
}

function ids(text: string, prefix: "f" | "k"): string[] {
  return [...new Set([...text.matchAll(new RegExp(`\\[(${prefix}:[0-9a-f]{12})\\]`, "g"))].map((m) => m[1]!))];
}

function pathAnswer(text: string): string {
  const m = /\nAnswer: (?:\(([A-Z])\) )?(.*)/.exec(text.slice(text.indexOf("medmmv-agent:")));
  return m ? (m[1] ?? m[2]!.trim()) : "";
}

function attemptOf(text: string): number {
  return Number(/attempt (\d+)\)/.exec(text)?.[1] ?? 1);
}

function answerObject(text: string, a: string) {
  const letters = optionLetters(text);
  if (letters.length) return { option: a, text: optionText(text, a) };
  return { option: null, text: a };
}

function path(text: string, answer: string, flavour: string) {
  const clauses = quotableClauses(text);
  const fact = clauses[0] ?? "the presenting findings";
  return {
    steps: [
      { text: `The case reports ${fact.toLowerCase()}${flavour}.`, stage: "reasoning", claims: [`The case reports ${fact.toLowerCase()}`] },
      { text: `Together the findings point to ${answer}.`, stage: "knowledge", claims: [`The findings are consistent with ${answer}`] },
    ],
    answer: answerObject(text, answer),
    summary: `Answer ${answer}, based on ${fact.toLowerCase()}.`,
  };
}

export function clinicalScenario(o: ClinicalScenarioOptions = {}): Scenario {
  const identical = o.identicalReasoning ?? true;
  const pickAnswer = (req: ScriptedRequest, index: number) => {
    if (o.answerFor) return o.answerFor(req, caseBlock(req.text));
    if (o.rolloutAnswers?.length) return o.rolloutAnswers[index % o.rolloutAnswers.length]!;
    return optionLetters(req.text)[0] ?? "yes";
  };
  return {
    name: "clinical",
    agents: {
      rollout: (req) => {
        const i = Number(/rollout (\d+) of/.exec(req.text)?.[1] ?? 1) - 1;
        const a = pickAnswer(req, i);
        return path(req.text, a, identical ? "" : ` (view ${i + 1})`);
      },
      cot: (req) => {
        const a = pickAnswer(req, 0);
        return { reasoning: "Step by step, the findings point to one answer.", answer: answerObject(req.text, a) };
      },
      "text-doctor": (req) => {
        const entities = quotableClauses(req.text).map((q, i) => ({
          category: i === 0 ? "symptom" : "history",
          label: q.toLowerCase().slice(0, 60),
          detail: null,
          quote: q,
        }));
        if (o.fabricateQuote) entities.push({ category: "history", label: "travel to the amazon", detail: null, quote: FABRICATED_QUOTE });
        return { entities };
      },
      "image-doctor": (req) => ({
        findings: [...caseBlock(req.text).matchAll(/Images: (.*)/g)].flatMap((m) =>
          m[1]!.split("; ").map((s) => s.split(" (")[0]!).map((id) => ({ imageId: id, label: `opacity on ${id}`, location: "central region", size: null, characteristics: "ill-defined, moderate density" })),
        ),
      }),
      "image-revise": (req) => ({
        findings: [...caseBlock(req.text).matchAll(/Images: (.*)/g)].flatMap((m) =>
          m[1]!.split("; ").map((s) => s.split(" (")[0]!).map((id) => ({ imageId: id, label: `opacity on ${id}`, location: "central region", size: null, characteristics: "ill-defined" })),
        ),
      }),
      "image-hd": (req) => {
        const n = [...req.text.matchAll(/^index (\d+):/gm)].length;
        return { hallucinationDetected: false, findings: Array.from({ length: n }, (_, i) => ({ index: i, verdict: "supported", issue: null })), improvementInstructions: [] };
      },
      "web-search-query": (req) => {
        const f = ids(req.text, "f");
        const pairs = [];
        for (let i = 0; i + 1 < f.length && pairs.length < 8; i++) pairs.push({ a: f[i]!, b: f[i + 1]!, query: `relationship between finding ${i + 1} and finding ${i + 2}` });
        return { pairs };
      },
      "web-search-analysis": () => ({
        relation: "associated-with",
        relationResultIndex: 0,
        knowledge: [{ label: "the two findings frequently co-occur", resultIndex: 0, relatesTo: "both", relation: "associated-with" }],
        suspiciousContent: false,
      }),
      "hd-supervisor": (req) => {
        const evidence = [...ids(req.text, "f"), ...ids(req.text, "k")];
        const claimIds = [...req.text.matchAll(/claimId (s\d+c\d+):/g)].map((m) => m[1]!);
        const answer = pathAnswer(req.text);
        const flagged = attemptOf(req.text) <= (o.repairsNeeded?.[answer] ?? 0);
        const claimText = (id: string) => new RegExp(`claimId ${id}: (.*)`).exec(req.text)?.[1] ?? "";
        const rejected = (id: string) => (o.unsupportedClaims ?? []).some((t) => claimText(id).includes(t));
        return {
          hallucinationDetected: flagged,
          recommendation: flagged ? "revise: a claim contradicts the evidence" : "accept",
          severity: flagged ? "MEDIUM" : "LOW",
          issues: flagged ? ["The second claim is not supported by the evidence graph."] : [],
          improvementInstructions: flagged ? ["Ground the conclusion in the listed findings."] : [],
          claims: claimIds.map((id, i) => ({
            claimId: id,
            verdict: flagged && i === claimIds.length - 1 ? "contradicted" : evidence.length && !rejected(id) ? "supported" : "unsupported",
            evidence: evidence.length && !rejected(id) ? [evidence[i % evidence.length]!] : [],
            stage: i === 0 ? "reasoning" : "knowledge",
          })),
        };
      },
      "auto-repair": (req) => {
        const from = pathAnswer(req.text);
        const to = o.repairTo?.[from] ?? from;
        return path(req.text, to, " (revised)");
      },
      "reply-composer": (req) => {
        const answer = pathAnswer(req.text);
        const fact = quotableClauses(req.text)[0] ?? "the presenting findings";
        return {
          statements: [
            { text: `The most likely answer is ${answer}.`, kind: "knowledge" },
            { text: `The case reports ${fact.toLowerCase()}.`, kind: "finding" },
            { text: "Other answers came up in some runs and cannot be excluded on this record alone.", kind: "uncertainty" },
            { text: "Confirm with the examination and tests the treating team would order next.", kind: "advice" },
            ...(o.extraReplyStatements ?? []),
          ],
        };
      },
      "equivalence-judge": (req) => (o.judgeReply !== undefined ? o.judgeReply : judgeEquivalence(req.text, o.synonyms)),
      // The content-free probe of a server's rules (format-probe.ts: `models check`, and the client's
      // check after a prose reply), answered as the model would when it obeys the format.
      "models-check": { ok: true },
      "coherence-judge": (req) => {
        const a = pathAnswer(req.text);
        return { coherence: o.coherence?.[a] ?? 0.8, rationale: "Each step follows from the previous one." };
      },
    },
  };
}
