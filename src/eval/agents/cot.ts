import { z } from "zod";
import type { PreparedCase } from "../../core/contracts/clinical-case.js";
import type { CallContext } from "../../core/llm/model-client.js";
import { answerInstruction, callAgent, type AgentDeps } from "../../core/agents/agent-context.js";

/** The zero-shot chain-of-thought baseline's reply (also sampled k times by self-consistency). */
export const CotOutput = z.object({
  reasoning: z.string().describe("Step-by-step reasoning from the case findings to the answer"),
  answer: z
    .object({
      option: z.string().nullable().describe("The chosen option letter, or null for open-ended questions"),
      text: z.string().describe('The answer text (for yes/no questions, "yes" or "no")'),
    })
    .describe("The committed answer"),
});
export type CotOutput = z.infer<typeof CotOutput>;

/**
 * One chain-of-thought call: the same case block, system prompt and image attachments as a
 * MedMMV rollout, so the baseline differs from MedMMV only in the method. The reply comes
 * back as the model gave it; mapping it onto the options is the caller's business.
 */
export async function runCot(deps: AgentDeps, ctx: CallContext, c: PreparedCase, input: { temperature: number }): Promise<CotOutput> {
  return callAgent(deps, ctx, c, {
    agent: "cot",
    role: "executor",
    temperature: input.temperature,
    schema: CotOutput,
    withImages: true,
    slots: { answerInstruction: answerInstruction(c) },
  });
}
