import { z } from "zod";
import type { PreparedCase } from "../../core/contracts/clinical-case.js";
import type { CallContext } from "../../core/llm/model-client.js";
import { callAgent, neutralise, type AgentDeps } from "../../core/agents/agent-context.js";

/** ClinHallu's step hallucination judge reply (reference §1.6). */
export const StageJudgeOutput = z.object({
  hallucinated: z.number().int().min(0).max(1).describe("1 when the step contains hallucinated, unsupported or medically wrong content, else 0"),
  reason: z.string().min(1).describe("A brief, non-empty justification"),
});
export type StageJudgeOutput = z.infer<typeof StageJudgeOutput>;

/** ClinHallu's stages (docs/evaluation.md#stage-wise-hallucination-diagnosis-clinhallu); the eval re-exports them, since agents do not import eval. */
export const STAGES = ["visual", "knowledge", "reasoning"] as const;
export type StageKey = (typeof STAGES)[number];

/** ClinHallu's stage names, as its trace headers, judge prompts and support context spell them. */
export const STAGE_NAMES: Record<StageKey, string> = { visual: "Visual Recognition", knowledge: "Knowledge Recall", reasoning: "Reasoning" };
const STAGE_INSTRUCTIONS: Record<StageKey, string> = {
  visual: "Are there hallucinated or incorrect visual findings? The reference step is guidance; the image evidence takes priority.",
  knowledge: "Is the knowledge hallucinated, unsupported, irrelevant to the question or medically wrong? Be strict.",
  reasoning: "Are there hallucinated claims, unsupported logical jumps or wrong inferences? Is the conclusion justified?",
};

/**
 * Judge one stage against its reference stage. Images go only with the visual stage
 * (ClinHallu's rule); every text but the instructions is fenced as data.
 */
export async function runStageJudge(
  deps: AgentDeps,
  ctx: CallContext,
  c: PreparedCase,
  input: { stage: StageKey; candidate: string; reference: string; support: string; groundTruth: string },
): Promise<StageJudgeOutput> {
  return callAgent(deps, ctx, c, {
    agent: "stage-judge",
    role: "judge",
    temperature: 0,
    schema: StageJudgeOutput,
    withImages: input.stage === "visual",
    slots: {
      stageName: STAGE_NAMES[input.stage],
      stageInstruction: STAGE_INSTRUCTIONS[input.stage],
      groundTruth: neutralise(input.groundTruth),
      reference: neutralise(input.reference),
      support: neutralise(input.support),
      candidate: neutralise(input.candidate),
    },
  });
}
