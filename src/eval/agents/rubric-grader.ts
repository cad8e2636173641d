import { z } from "zod";
import type { PreparedCase } from "../../core/contracts/clinical-case.js";
import type { CallContext } from "../../core/llm/model-client.js";
import { callAgent, neutralise, type AgentDeps } from "../../core/agents/agent-context.js";

/** The rubric grader's verdict on one criterion (HealthBench's grader: met or not, with why). */
export const RubricGraderOutput = z.object({
  met: z.boolean().describe("true only when the reply meets every part of the criterion"),
  explanation: z.string().min(1).describe("Why the criterion is or is not met, briefly"),
});
export type RubricGraderOutput = z.infer<typeof RubricGraderOutput>;

/**
 * Grade one reply against one rubric criterion, on the judge role at temperature 0. The
 * conversation is the case block (earlier turns as notes, the last user turn as the
 * question); the reply and the criterion are fenced as data — the reply is model output and
 * the criterion comes from a dataset file.
 */
export async function runRubricGrader(deps: AgentDeps, ctx: CallContext, c: PreparedCase, input: { reply: string; criterion: string; points: number }): Promise<RubricGraderOutput> {
  return callAgent(deps, ctx, c, {
    agent: "rubric-grader",
    role: "judge",
    temperature: 0,
    schema: RubricGraderOutput,
    withImages: false,
    slots: { reply: neutralise(input.reply), criterion: neutralise(input.criterion), points: String(input.points) },
  });
}
