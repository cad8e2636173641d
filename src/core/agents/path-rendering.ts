import type { PathOutput } from "../contracts/reasoning-path.js";
import { neutralise } from "./agent-context.js";

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
