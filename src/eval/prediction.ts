import { normalizeAnswer } from "./answer-match.js";
import type { GoldAnswer } from "./datasets/types.js";
import type { RecordStatus } from "./results-file.js";

/**
 * The answer a record is scored on, as an official scorer should read it: the option letter
 * (or, without options, the answer text) of a completed item; null for an abstained or failed
 * one. `answer.option` stays on the record as what the selected path said (for audit): an
 * abstaining pipeline may still hold a path's letter there, and counting it would score an
 * abstention as an answer.
 *
 * A multiple-choice reply that names no letter but whose text is one option's text predicts
 * that option's letter, so a letter-based scorer agrees with our own grading (answer-match.ts).
 */
export function predictionOf(status: RecordStatus, answer: { option: string | null; text: string } | null, gold: GoldAnswer, options?: Record<string, string>): string | null {
  if (status !== "completed" || answer === null) return null;
  const option = answer.option?.trim().toUpperCase();
  if (option) return option;
  if (gold.kind === "choice" && options) {
    const text = normalizeAnswer(answer.text);
    const letter = text === "" ? undefined : Object.keys(options).find((l) => normalizeAnswer(options[l]!) === text);
    if (letter) return letter;
  }
  const text = answer.text.trim();
  return text === "" ? null : text;
}
