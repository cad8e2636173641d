import type { ConversationOutcome, QuestionOrder } from "./types.js";

/** Dr-LLaVA's conversation metrics for one question order (reference §2.4). */
export interface ConversationMetrics {
  /** Correctly answered questions / all questions asked, across conversations. */
  aQ: number | null;
  /** Conversations with every question answered correctly / conversations. */
  aC: number | null;
  /** Conversations whose diagnosis question was answered correctly / conversations (earlier steps ignored). */
  aD: number | null;
  /** Conversations whose labelled sequence is not a valid rule / conversations (per conversation, not per answer). */
  hCC: number | null;
  conversations: number;
  questions: number;
  failed: number;
}

/**
 * The metrics over a set of conversations. A turn is correct when the labeller's category
 * equals the expected one. A failed conversation counts with every planned turn wrong and
 * its diagnosis wrong; it is left out of H_cc, which needs labels to test. A conversation
 * in which the diagnosis question was asked more than once (ii) is diagnosed correctly when
 * its last diagnosis answer is; one in which it was never asked is not.
 */
export function conversationMetrics(outcomes: readonly ConversationOutcome[]): ConversationMetrics {
  const n = outcomes.length;
  const questions = outcomes.reduce((s, o) => s + (o.failed ? o.planned : o.turns.length), 0);
  const correctQ = outcomes.reduce((s, o) => s + (o.failed ? 0 : o.turns.filter((t) => t.correct).length), 0);
  const allCorrect = outcomes.filter((o) => !o.failed && o.turns.length > 0 && o.turns.every((t) => t.correct)).length;
  const diagnosed = outcomes.filter((o) => !o.failed && o.turns.filter((t) => t.step === o.diagnosisStep).at(-1)?.correct === true).length;
  const labelled = outcomes.filter((o) => !o.failed);
  const conflicts = labelled.filter((o) => o.turns.some((t) => t.contextConflict)).length;
  return {
    aQ: questions ? correctQ / questions : null,
    aC: n ? allCorrect / n : null,
    aD: n ? diagnosed / n : null,
    hCC: labelled.length ? conflicts / labelled.length : null,
    conversations: n,
    questions,
    failed: n - labelled.length,
  };
}

/** Metrics per order, for summary.json `conversation`. */
export function metricsByOrder(outcomes: readonly ConversationOutcome[]): Partial<Record<QuestionOrder, ConversationMetrics>> {
  const out: Partial<Record<QuestionOrder, ConversationMetrics>> = {};
  for (const order of [...new Set(outcomes.map((o) => o.order))]) out[order] = conversationMetrics(outcomes.filter((o) => o.order === order));
  return out;
}
