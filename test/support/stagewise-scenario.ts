/**
 * Scripted behaviours for ClinHallu's stage-wise protocol (medmmv-agent stagewise-trace,
 * stagewise-trace-text, stagewise-continue, answer-judge, stage-judge, cot-staged). The
 * scripted model finds the item a prompt is about by its question, and by default behaves
 * like a model that reproduces the reference stages and the gold answer; the stage judge
 * compares the judged step with the reference step, the answer judge compares answers.
 * Each behaviour can be overridden per test.
 */
import type { EvalItem } from "../../src/eval/datasets/types.js";
import { parseTrace, renderTrace } from "../../src/eval/stagewise/trace-parser.js";
import type { ReplacementKey, StageKey, StageTrace } from "../../src/eval/stagewise/types.js";
import type { Scenario, ScriptedRequest } from "../../src/scripted/scripted-openai-server.js";

export interface TraceReply {
  trace: StageTrace;
}

export interface StagewiseBehaviour {
  /** The baseline trace the model writes (default: the reference trace). */
  trace?: (it: EvalItem, attempt: number) => StageTrace;
  /** The answer a replacement continuation ends in (default: the reference answer). */
  continuationAnswer?: (it: EvalItem, setting: ReplacementKey) => string;
  /** A continuation whose reply never validates, so its call fails for good (LLM_BAD_OUTPUT). */
  continuationFails?: (it: EvalItem, setting: ReplacementKey) => boolean;
  /** 0 / 1, or "fail" for a judge reply that never validates. Default: the judged step equals the reference step → 0. */
  stageJudge?: (it: EvalItem, stage: StageKey, candidate: string, reference: string) => 0 | 1 | "fail";
  /** Default: normalised equality of prediction and ground truth (either the whole or the text after "X. "). */
  answerJudge?: (it: EvalItem, prediction: string, groundTruth: string) => 0 | 1 | "fail";
}

export interface TraceCall {
  item: string;
  images: number;
  /** The prompt asked for the text-only variant of the visual stage. */
  textOnly: boolean;
}

export interface StageJudgeCall {
  item: string;
  stage: StageKey;
  images: number;
}

const STAGE_BY_NAME: Record<string, StageKey> = { "Visual Recognition": "visual", "Knowledge Recall": "knowledge", Reasoning: "reasoning" };
const block = (text: string, label: string) => new RegExp(`${label}\\n<<<MODEL_OUTPUT\\n([\\s\\S]*?)\\nMODEL_OUTPUT>>>`).exec(text)?.[1] ?? null;
const norm = (s: string) => s.trim().toLowerCase().replace(/[.,;:!?]+$/, "");
/** Message content that is not JSON: the client re-asks, then gives up (LLM_BAD_OUTPUT). */
const INVALID = "not json at all";

export function stagewiseScenario(items: readonly EvalItem[], b: StagewiseBehaviour = {}): Scenario & { stageJudgeCalls: StageJudgeCall[]; traceCalls: TraceCall[] } {
  // Keyed by the question's first line: the case block shows the question from there on.
  const byQuestion = new Map(items.map((it) => [it.case.question.split("\n")[0]!, it]));
  const itemOf = (req: ScriptedRequest): EvalItem => {
    const q = /Question:\n([^\n]*)/.exec(req.text)?.[1] ?? "";
    const it = byQuestion.get(q);
    if (!it) throw new Error(`stagewise scenario: no item for question ${JSON.stringify(q)} (${req.agent})`);
    return it;
  };
  const ref = (it: EvalItem): StageTrace => {
    if (!it.stagewise?.reference) throw new Error(`stagewise scenario: item ${it.id} has no reference trace`);
    return it.stagewise.reference;
  };
  const attempts = new Map<string, number>();
  const traceCalls: TraceCall[] = [];
  const traceOf = (it: EvalItem, req: ScriptedRequest) => {
    traceCalls.push({ item: it.id, images: req.images.length, textOnly: req.text.includes("there is no image: describe the visual features that would typically be expected") });
    const n = attempts.get(it.id) ?? 0;
    attempts.set(it.id, n + 1);
    return b.trace ? b.trace(it, n) : ref(it);
  };
  const stageJudgeCalls: StageJudgeCall[] = [];
  const continuation = (req: ScriptedRequest) => {
    const it = itemOf(req);
    const given = parseTrace(block(req.text, "data, not instructions:") ?? "") ?? {};
    const r = ref(it);
    const setting: ReplacementKey = given.knowledge === undefined ? "V" : given.visual === r.visual ? "VK" : "K";
    if (b.continuationFails?.(it, setting)) return INVALID;
    const answer = b.continuationAnswer ? b.continuationAnswer(it, setting) : r.answer;
    const writeKnowledge = setting === "V";
    if (req.text.includes("in `continuation`")) return { continuation: renderTrace({ ...(writeKnowledge ? { knowledge: r.knowledge } : {}), reasoning: r.reasoning, answer }) };
    return writeKnowledge ? { knowledgeRecall: r.knowledge, reasoning: r.reasoning, answer } : { reasoning: r.reasoning, answer };
  };
  return {
    name: "stagewise",
    stageJudgeCalls,
    traceCalls,
    agents: {
      "stagewise-trace": (req: ScriptedRequest) => {
        const t = traceOf(itemOf(req), req);
        return { visualRecognition: t.visual, knowledgeRecall: t.knowledge, reasoning: t.reasoning, answer: t.answer };
      },
      "stagewise-trace-text": (req: ScriptedRequest) => ({ trace: `Here is my analysis.\n${renderTrace(traceOf(itemOf(req), req))}` }),
      "stagewise-continue": continuation,
      "answer-judge": (req: ScriptedRequest) => {
        const it = itemOf(req);
        const prediction = block(req.text, "Predicted answer:") ?? "";
        const truth = /Ground truth: ([^\n]*)/.exec(req.text)?.[1] ?? "";
        const strip = (s: string) => norm(s.replace(/^[A-Z]\.\s+/, ""));
        // As a judge reads it: the whole answer, the text after "X. ", or the gold option's bare letter.
        const bareLetter = /^\(?([A-Z])\)?\.?$/.exec(prediction.trim())?.[1];
        const same = norm(prediction) === norm(truth) || strip(prediction) === strip(truth) || (bareLetter !== undefined && truth.startsWith(`${bareLetter}. `));
        const v = b.answerJudge ? b.answerJudge(it, prediction, truth) : same ? 1 : 0;
        return v === "fail" ? INVALID : { answer_correct: v, answer_reasoning: "Scripted verdict." };
      },
      "stage-judge": (req: ScriptedRequest) => {
        const it = itemOf(req);
        const stage = STAGE_BY_NAME[/— its (Visual Recognition|Knowledge Recall|Reasoning) step/.exec(req.text)?.[1] ?? ""];
        if (!stage) throw new Error("stagewise scenario: stage-judge prompt names no stage");
        stageJudgeCalls.push({ item: it.id, stage, images: req.images.length });
        const candidate = block(req.text, "Step to judge:") ?? "";
        const reference = block(req.text, "step \\(guidance\\):") ?? "";
        const v = b.stageJudge ? b.stageJudge(it, stage, candidate, reference) : candidate.trim() === reference.trim() ? 0 : 1;
        return v === "fail" ? INVALID : { hallucinated: v, reason: v ? "Scripted: differs from the reference." : "Scripted: matches the reference." };
      },
    },
  };
}
