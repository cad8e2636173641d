import { z } from "zod";

/** The path format shared by rollout and auto-repair (a short diagnostic path + answer). */
export const PathOutput = z.object({
  steps: z
    .array(
      z.object({
        text: z.string().min(1).describe("One sentence describing this reasoning step"),
        stage: z.enum(["visual", "knowledge", "reasoning"]).describe("visual = reads an image; knowledge = recalls medical knowledge; reasoning = integrates facts"),
        claims: z.array(z.string().min(1)).min(1).max(3).describe("Atomic, checkable factual statements made in this step"),
      }),
    )
    .min(1)
    .max(6)
    .describe("2 to 4 short reasoning steps"),
  answer: z
    .object({
      option: z.string().nullable().describe("The chosen option letter, or null for open-ended questions"),
      text: z.string().describe("The answer text"),
    })
    .describe("The committed answer"),
  summary: z.string().describe("One sentence: the answer and its key reason"),
});
export type PathOutput = z.infer<typeof PathOutput>;
