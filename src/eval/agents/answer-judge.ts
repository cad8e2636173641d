import { z } from "zod";
import type { PreparedCase } from "../../core/contracts/clinical-case.js";
import type { CallContext } from "../../core/llm/model-client.js";
import { callAgent, neutralise, type AgentDeps } from "../../core/agents/agent-context.js";

/** ClinHallu's answer judge reply (reference §1.5). */
export const AnswerJudgeOutput = z.object({
  answer_correct: z.number().int().min(0).max(1).describe("1 when the prediction is semantically correct against the ground truth, else 0"),
  answer_reasoning: z.string().describe("A brief justification"),
});
export type AnswerJudgeOutput = z.infer<typeof AnswerJudgeOutput>;

/** The judge role at temperature 0; the prediction is another model's text, fenced as data. */
export async function runAnswerJudge(deps: AgentDeps, ctx: CallContext, c: PreparedCase, input: { prediction: string; groundTruth: string }): Promise<AnswerJudgeOutput> {
  return callAgent(deps, ctx, c, {
    agent: "answer-judge",
    role: "judge",
    temperature: 0,
    schema: AnswerJudgeOutput,
    slots: { prediction: neutralise(input.prediction), groundTruth: neutralise(input.groundTruth) },
  });
}
