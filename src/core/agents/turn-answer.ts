import { z } from "zod";
import type { PreparedCase } from "../contracts/clinical-case.js";
import type { CallContext } from "../llm/model-client.js";
import type { Pathway } from "../contracts/pathway.js";
import { callAgent, neutralise, type AgentDeps } from "./agent-context.js";

export const TurnOutput = z.object({
  step: z.string().nullable().describe("Id of the pathway step the question asks about (one of the ids listed), or null when there is no pathway or none fits"),
  answer: z.string().min(1).describe("One or two sentences that answer the question directly"),
  claims: z.array(z.string().min(1)).min(1).max(3).describe("Atomic, checkable factual statements the answer rests on"),
});
export type TurnOutput = z.infer<typeof TurnOutput>;

/** One earlier turn as the prompt shows it. */
export interface HistoryTurn {
  turn: number;
  question: string;
  answer: string;
}

function renderHistory(history: HistoryTurn[]): string {
  if (history.length === 0) return "(no earlier turns)";
  // Client and model text inside a fence: neither may close it.
  return history.map((t) => `Turn ${t.turn}\nQ: ${neutralise(t.question)}\nA: ${neutralise(t.answer)}`).join("\n\n");
}

function pathwayInstruction(pathway: Pathway | undefined, step: string | undefined): string {
  if (!pathway) return "- `step`: null (this case has no clinical pathway).";
  // The steps and valid paths are in the case block; here only what this turn must do with them.
  const pick = step ? `- \`step\`: "${step}" (the clinician says the question is about this step).` : `- \`step\`: the id of the step of the pathway the question asks about (${pathway.steps.map((s) => s.id).join(", ")}), or null if none fits.`;
  return `Your answers across the whole conversation must stay on one valid path of the clinical pathway "${pathway.title}" given in the case block.\n${pick}`;
}

/** A short rollout for one conversation turn (executor, temperature 0: a turn is answered once). */
export async function runTurnAnswer(
  deps: AgentDeps,
  ctx: CallContext,
  c: PreparedCase,
  input: { question: string; history: HistoryTurn[]; pathway?: Pathway; step?: string; evidenceText?: string },
): Promise<TurnOutput> {
  return callAgent(deps, ctx, c, {
    agent: "turn-answer",
    role: "executor",
    temperature: 0,
    schema: TurnOutput,
    withImages: true,
    ...(input.evidenceText !== undefined ? { evidence: input.evidenceText } : {}),
    slots: { history: renderHistory(input.history), question: neutralise(input.question), pathwayInstruction: pathwayInstruction(input.pathway, input.step) },
  });
}
