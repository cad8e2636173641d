import { z } from "zod";
import { neutralise } from "./agent-context.js";

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

/**
 * Render a path with stable claim ids (s1c1, s1c2, …) so judges can refer to claims exactly.
 * The text is a model's: it goes inside a MODEL_OUTPUT fence and must not be able to close it.
 */
export function renderPathForPrompt(p: PathOutput): string {
  const lines: string[] = [];
  p.steps.forEach((s, i) => {
    lines.push(`Step ${i + 1} [${s.stage}]: ${neutralise(s.text)}`);
    s.claims.forEach((c, j) => lines.push(`  - claimId s${i + 1}c${j + 1}: ${neutralise(c)}`));
  });
  lines.push(`Answer: ${p.answer.option ? `(${neutralise(p.answer.option)}) ` : ""}${neutralise(p.answer.text)}`);
  return lines.join("\n");
}

export function claimIds(p: PathOutput): string[] {
  return p.steps.flatMap((s, i) => s.claims.map((_, j) => `s${i + 1}c${j + 1}`));
}

/** Normalise a model's answer against the case's options: a valid letter or null. */
export function normaliseAnswer(p: PathOutput, options: Record<string, string> | undefined): PathOutput["answer"] {
  if (!options || Object.keys(options).length === 0) return { option: null, text: p.answer.text.trim() };
  const letter = (p.answer.option ?? "").trim().replace(/[^A-Za-z]/g, "").toUpperCase();
  if (letter.length === 1 && options[letter] !== undefined) return { option: letter, text: options[letter]! };
  // Some models put the letter only in the text ("C. Sarcoidosis").
  const m = /^\(?([A-Z])[).:\s]/.exec(p.answer.text.trim());
  if (m && options[m[1]!] !== undefined) return { option: m[1]!, text: options[m[1]!]! };
  return { option: null, text: p.answer.text.trim() };
}
