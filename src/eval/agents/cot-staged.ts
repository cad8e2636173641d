import { z } from "zod";
import type { PreparedCase } from "../../core/contracts/clinical-case.js";
import type { CallContext } from "../../core/llm/model-client.js";
import { answerInstruction, callAgent, type AgentDeps } from "../../core/agents/agent-context.js";
import { CotOutput } from "./cot.js";
import { PathOutput } from "../../core/contracts/reasoning-path.js";

/**
 * The CoT baseline with stage-tagged steps (for --stage-judge): the same case block and
 * images as plain CoT, and the same answer shape, so that the CoT and MedMMV paths can be
 * judged stage by stage on one scale.
 */
export const StagedCotOutput = z.object({
  steps: z
    .array(
      z.object({
        text: z.string().min(1).describe("One reasoning step"),
        // The same stage tag as a MedMMV path step, so both are grouped by one rule.
        stage: PathOutput.shape.steps.element.shape.stage,
      }),
    )
    .min(1)
    .describe("The step-by-step reasoning, each step tagged with its stage"),
  answer: CotOutput.shape.answer,
});
export type StagedCotOutput = z.infer<typeof StagedCotOutput>;

export async function runStagedCot(deps: AgentDeps, ctx: CallContext, c: PreparedCase, input: { temperature: number }): Promise<StagedCotOutput> {
  return callAgent(deps, ctx, c, {
    agent: "cot-staged",
    role: "executor",
    temperature: input.temperature,
    schema: StagedCotOutput,
    withImages: true,
    slots: { answerInstruction: answerInstruction(c) },
  });
}
