import { NO_MATCH } from "../../core/contracts/pathway.js";
import type { ConversationOutcome, QuestionOrder } from "./types.js";

/** Dr-LLaVA's conversation metrics for one question order (reference §2.4). */
export interface ConversationMetrics {
  /** Correctly answered questions / all questions asked, across conversations. */
  aQ: number | null;
  /** Conversations with every question answered correctly / conversations. */
  aC: number | null;
  /** Conversations whose diagnosis question was answered correctly / conversations that asked it (earlier steps ignored). */
  aD: number | null;
  /**
   * Ours: conversations whose labelled answers fit no valid path / labelled conversations. An
   * answer that names no category (no-match, ambiguous) constrains nothing.
   */
  hCC: number | null;
  /**
   * The reference's (Dr-LLaVA): an answer that names no category is on no valid path either,
   * so a conversation with any such answer counts as well. A model that answers with letters
   * only scores 0 on `hCC` and 1 here.
   */
  hCCReference: number | null;
  conversations: number;
  /** Conversations that asked the diagnosis question (A_D's denominator; failed ones included). */
  diagnosisAsked: number;
  questions: number;
  failed: number;
  /** Asked turns whose gold answer names no category (the record's path stood in); summary.md reports them. */
  goldUnlabelled: number;
}

/**
 * The metrics over a set of conversations. A turn is correct when the labeller's category
 * equals the expected one. A failed conversation counts with every planned turn wrong and
 * its diagnosis wrong; it is left out of H_cc, which needs labels to test. A conversation
 * is diagnosed correctly when its last diagnosis answer is; one that never asked the
 * diagnosis (ii-sample) is left out of A_D (the reference's scripts score only the
 * questions they asked).
 */
export function conversationMetrics(outcomes: readonly ConversationOutcome[]): ConversationMetrics {
  const n = outcomes.length;
  const questions = outcomes.reduce((s, o) => s + (o.failed ? o.planned : o.turns.length), 0);
  const correctQ = outcomes.reduce((s, o) => s + (o.failed ? 0 : o.turns.filter((t) => t.correct).length), 0);
  const allCorrect = outcomes.filter((o) => !o.failed && o.turns.length > 0 && o.turns.every((t) => t.correct)).length;
  const diagnosed = outcomes.filter((o) => !o.failed && o.turns.filter((t) => t.step === o.diagnosisStep).at(-1)?.correct === true).length;
  // A sampled improvised order may leave the diagnosis out: that conversation says nothing about A_D.
  const diagnosisAsked = outcomes.filter((o) => o.failed || o.turns.some((t) => t.step === o.diagnosisStep)).length;
  const labelled = outcomes.filter((o) => !o.failed);
  const conflicts = labelled.filter((o) => o.turns.some((t) => t.contextConflict)).length;
  const offPathReference = labelled.filter((o) => o.turns.some((t) => t.contextConflict || t.category === null || t.category === NO_MATCH)).length;
  return {
    aQ: questions ? correctQ / questions : null,
    aC: n ? allCorrect / n : null,
    aD: diagnosisAsked ? diagnosed / diagnosisAsked : null,
    hCC: labelled.length ? conflicts / labelled.length : null,
    hCCReference: labelled.length ? offPathReference / labelled.length : null,
    conversations: n,
    diagnosisAsked,
    questions,
    failed: n - labelled.length,
    goldUnlabelled: outcomes.reduce((s, o) => s + o.turns.filter((t) => t.goldUnlabelled).length, 0),
  };
}

/** Metrics per order, for summary.json `conversation`. */
export function metricsByOrder(outcomes: readonly ConversationOutcome[]): Partial<Record<QuestionOrder, ConversationMetrics>> {
  const out: Partial<Record<QuestionOrder, ConversationMetrics>> = {};
  for (const order of [...new Set(outcomes.map((o) => o.order))]) out[order] = conversationMetrics(outcomes.filter((o) => o.order === order));
  return out;
}
