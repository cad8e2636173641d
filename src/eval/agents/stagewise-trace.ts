import { z } from "zod";
import type { PreparedCase } from "../../core/contracts/clinical-case.js";
import type { CallContext } from "../../core/llm/model-client.js";
import { callAgent, neutralise, type AgentDeps } from "../../core/agents/agent-context.js";
import { STAGE_NAMES } from "./stage-judge.js";

/** One structured stage-wise trace (ClinHallu's three stages and the answer). */
export const StagewiseTraceOutput = z.object({
  visualRecognition: z.string().describe("Objective visual findings only: no diagnosis, no reference to the question"),
  knowledgeRecall: z.string().describe("Medical knowledge relevant to the question, without reference to the image"),
  reasoning: z.string().describe("Integration of the visual findings and the knowledge into a conclusion"),
  answer: z.string().describe('The answer: "letter. text" when options are shown, exactly "yes" or "no" for a yes/no question, else a short answer'),
});
export type StagewiseTraceOutput = z.infer<typeof StagewiseTraceOutput>;

/** ClinHallu's own protocol: the trace as free text under its bracket headers. */
export const TextTraceOutput = z.object({
  trace: z.string().describe("The trace as plain text under the headers [Visual Recognition], [Knowledge Recall], [Reasoning], ending with a line [Answer] …"),
});

/** Rep-V continuation: the model writes knowledge, reasoning and answer after the gold visual stage. */
export const ContinueKnowledgeOutput = z.object({
  knowledgeRecall: z.string().describe("Medical knowledge relevant to the question, without reference to the image"),
  reasoning: z.string().describe("Integration of the given and the recalled stages into a conclusion"),
  answer: z.string().describe("The answer, in the form the task asks for"),
});
/** Rep-K / Rep-VK continuation: the model writes only the reasoning and answer. */
export const ContinueReasoningOutput = z.object({
  reasoning: z.string().describe("Integration of the given stages into a conclusion"),
  answer: z.string().describe("The answer, in the form the task asks for"),
});
/** A continuation in ClinHallu's free-text protocol. */
export const TextContinuationOutput = z.object({
  continuation: z.string().describe("Only the remaining stage(s) as plain text under their bracket headers, ending with a line [Answer] …"),
});

export type TraceFormatName = "structured" | "text";

/** The answer form ClinHallu asks for: "letter. text" with options, yes/no for a yes/no question. */
export function stagewiseAnswerInstruction(c: PreparedCase): string {
  if (c.options && Object.keys(c.options).length)
    return `choose one of the options shown (${Object.keys(c.options).sort().join(", ")}) and answer as "letter. text"; never invent an option letter.`;
  return 'there are no options: for a yes/no question answer exactly "yes" or "no", otherwise give a short answer.';
}

function visualInstruction(c: PreparedCase): string {
  return c.images.length > 0
    ? "only the objective visual findings in the attached image(s): no diagnosis, no reference to the question."
    : "there is no image: describe the visual features that would typically be expected for this question (no diagnosis).";
}

/** One trace call; images attached (the text-only variant when the case has none). */
export async function runStagewiseTrace(deps: AgentDeps, ctx: CallContext, c: PreparedCase, input: { format: TraceFormatName; temperature: number }): Promise<StagewiseTraceOutput | { trace: string }> {
  const slots = { visualInstruction: visualInstruction(c), answerInstruction: stagewiseAnswerInstruction(c) };
  if (input.format === "text")
    return callAgent(deps, ctx, c, { agent: "stagewise-trace-text", role: "executor", temperature: input.temperature, schema: TextTraceOutput, withImages: true, slots });
  return callAgent(deps, ctx, c, { agent: "stagewise-trace", role: "executor", temperature: input.temperature, schema: StagewiseTraceOutput, withImages: true, slots });
}

/**
 * A replacement continuation (reference §1.4): the given stages (gold, or the model's own
 * visual stage) in ClinHallu's header format, fenced as data; the model writes the rest.
 */
export async function runStagewiseContinuation(
  deps: AgentDeps,
  ctx: CallContext,
  c: PreparedCase,
  input: { given: string; writeKnowledge: boolean; format: TraceFormatName; temperature: number },
): Promise<{ knowledgeRecall?: string; reasoning: string; answer: string } | { continuation: string }> {
  const remaining = input.writeKnowledge ? `[${STAGE_NAMES.knowledge}] and [${STAGE_NAMES.reasoning}]` : `[${STAGE_NAMES.reasoning}]`;
  const outputInstruction =
    input.format === "text"
      ? `Write them as plain text in \`continuation\` under their exact headers (${remaining}), ending with a line \`[Answer] …\`; do not repeat the given stages.`
      : input.writeKnowledge
        ? "Put them in `knowledgeRecall`, `reasoning` and `answer`."
        : "Put them in `reasoning` and `answer`.";
  const slots = { given: neutralise(input.given), remaining, outputInstruction, answerInstruction: stagewiseAnswerInstruction(c) };
  const base = { agent: "stagewise-continue", role: "executor" as const, temperature: input.temperature, withImages: true, slots };
  if (input.format === "text") return callAgent(deps, ctx, c, { ...base, schema: TextContinuationOutput });
  if (input.writeKnowledge) return callAgent(deps, ctx, c, { ...base, schema: ContinueKnowledgeOutput });
  return callAgent(deps, ctx, c, { ...base, schema: ContinueReasoningOutput });
}
