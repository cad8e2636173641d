import type { ConversationDatasetName, EvalItem } from "../datasets/types.js";
import type { Pathway } from "../../core/contracts/pathway.js";

export const CONVERSATION_DATASETS = ["drllava", "conversation"] as const satisfies readonly ConversationDatasetName[];
export type { ConversationDatasetName };
export const QUESTION_ORDERS = ["si", "df", "ii"] as const;
/** Dr-LLaVA App. C: standard, diagnosis first, improvised (random, with replacement). */
export type QuestionOrder = (typeof QUESTION_ORDERS)[number];

/** One question of a conversation, with the category its answer should be labelled with. */
export interface TurnSpec {
  question: string;
  step: string;
  expected: string;
}

/** A case and the questions to walk it with, in the dataset's standard order. */
export interface ConversationItem {
  /** `case` is the ClinicalCase the pipeline runs; `gold.text` the expected diagnosis category. */
  item: EvalItem;
  pathway: Pathway;
  turns: TurnSpec[];
}

/** One asked turn as results.jsonl records it. */
export interface TurnOutcome {
  turn: number;
  question: string;
  step: string;
  expected: string;
  answer: string;
  category: string | null;
  correct: boolean;
  contextConflict: boolean;
}

/** One conversation (an item in one order). */
export interface ConversationOutcome {
  order: QuestionOrder;
  /** The pathway's last step, whose answer is the diagnosis (A_D). */
  diagnosisStep: string;
  /** Turns planned (a failed conversation answered fewer). */
  planned: number;
  turns: TurnOutcome[];
  failed: boolean;
}
