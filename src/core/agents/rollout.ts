import type { PreparedCase } from "../contracts/clinical-case.js";
import type { CallContext } from "../llm/model-client.js";
import { answerInstruction, callAgent, type AgentDeps } from "./agent-context.js";
import { normaliseAnswer } from "./path-rendering.js";
import { PathOutput } from "../contracts/reasoning-path.js";

/**
 * Stage 1: one short, diverse diagnostic path (executor at rollout temperature), on
 * `input.model` when the rollouts are spread over several models (a mixed-vendor panel).
 */
export async function runRollout(
  deps: AgentDeps,
  ctx: CallContext,
  input: { case: PreparedCase; index: number; k: number; temperature: number; model?: string },
): Promise<PathOutput> {
  const out = await callAgent(deps, ctx, input.case, {
    agent: "rollout",
    role: "executor",
    ...(input.model !== undefined ? { model: input.model } : {}),
    temperature: input.temperature,
    schema: PathOutput,
    withImages: true,
    slots: { rolloutIndex: String(input.index + 1), k: String(input.k), answerInstruction: answerInstruction(input.case) },
  });
  return { ...out, answer: normaliseAnswer(out, input.case.options) };
}
