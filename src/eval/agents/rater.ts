import { z } from "zod";
import type { PreparedCase } from "../../core/contracts/clinical-case.js";
import type { CallContext } from "../../core/llm/model-client.js";
import { callAgent, neutralise, type AgentDeps } from "../../core/agents/agent-context.js";

/** A reliability rater's scores (docs/architecture.md#scores): T and I on 1–5, C on 0–1. */
export const RaterOutput = z.object({
  truthfulness: z.number().min(1).max(5).describe("1–5: are the statements medically true and free of fabrication?"),
  informativeness: z.number().min(1).max(5).describe("1–5: does the answer give the clinically useful content the question asks for?"),
  consistency: z.number().min(0).max(1).describe("0–1: do statements about the image(s) agree with the image(s)? 1 when there is no image"),
  rationale: z.string().describe("One or two sentences justifying the scores"),
});
export type RaterOutput = z.infer<typeof RaterOutput>;

/**
 * Rate one method output against the case (images attached) and the reference answer. The
 * output is another model's text: it goes inside a MODEL_OUTPUT block as data, with our
 * delimiters neutralised so it cannot close the block and speak as the instructions.
 */
export async function runRater(deps: AgentDeps, ctx: CallContext, c: PreparedCase, input: { output: string; gold: string }): Promise<RaterOutput> {
  return callAgent(deps, ctx, c, {
    agent: "rater",
    role: "judge",
    temperature: 0,
    schema: RaterOutput,
    withImages: true,
    slots: { output: neutralise(input.output), gold: neutralise(input.gold) },
  });
}
