import { z } from "zod";
import type { PreparedCase } from "../contracts/clinical-case.js";
import type { CallContext } from "../llm/model-client.js";
import { callAgent, type AgentDeps } from "./agent-context.js";
import { renderPathForPrompt } from "./path-rendering.js";
import { type PathOutput } from "../contracts/reasoning-path.js";

export const CoherenceOutput = z.object({
  coherence: z.number().min(0).max(1).describe("0 = incoherent, 1 = fully coherent"),
  rationale: z.string().describe("One or two sentences"),
});

/** S_coherence ∈ [0,1] for a final path (judge at temperature 0). */
export async function runCoherenceJudge(deps: AgentDeps, ctx: CallContext, c: PreparedCase, path: PathOutput): Promise<z.infer<typeof CoherenceOutput>> {
  return callAgent(deps, ctx, c, { agent: "coherence-judge", role: "judge", temperature: 0, schema: CoherenceOutput, slots: { path: renderPathForPrompt(path) } });
}
