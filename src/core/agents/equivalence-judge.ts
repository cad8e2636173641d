import { z } from "zod";
import type { PreparedCase } from "../contracts/clinical-case.js";
import type { CallContext } from "../llm/model-client.js";
import { callAgent, neutralise, type AgentDeps } from "./agent-context.js";

/**
 * The contract any model server plays (docs/architecture.md#scores): the prompt numbers the
 * answers one per line ("1. Inferior STEMI"), the reply's `groups` partitions the numbers.
 * The schema only shapes the reply; whether it partitions 1..n is checked by the caller
 * (readJudgeGroups), so an out-of-contract reply is reported, not retried into the case.
 */
export const EquivalenceOutput = z.object({
  groups: z.array(z.array(z.number().int())).describe("Groups of answer numbers that mean the same; every number in exactly one group"),
  rationale: z.string().optional().describe("One short sentence"),
});
export type EquivalenceOutput = z.infer<typeof EquivalenceOutput>;

/** The answers as the prompt numbers them: one per line, model text that cannot close the fence. */
export function numberAnswers(wordings: readonly string[]): string {
  return wordings.map((w, i) => `${i + 1}. ${neutralise(w.replace(/\s+/g, " ").trim())}`).join("\n");
}

/** One equivalence-judge call (judge role, temperature 0). */
export async function runEquivalenceJudge(deps: AgentDeps, ctx: CallContext, c: PreparedCase, wordings: readonly string[]): Promise<EquivalenceOutput> {
  return callAgent(deps, ctx, c, { agent: "equivalence-judge", role: "judge", temperature: 0, schema: EquivalenceOutput, slots: { answers: numberAnswers(wordings) } });
}
