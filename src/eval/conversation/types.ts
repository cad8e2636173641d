import type { ConversationDatasetName, EvalItem } from "../datasets/types.js";
import type { Pathway } from "../../core/contracts/pathway.js";
import type { TurnStatement } from "../probes/conversation-hypothesis.js";

export const CONVERSATION_DATASETS = ["drllava", "conversation"] as const satisfies readonly ConversationDatasetName[];
export type { ConversationDatasetName };
export const QUESTION_ORDERS = ["si", "df", "ii", "ii-sample"] as const;
/** What a run asks without --order: the paper's three (ii-sample on request). */
export const DEFAULT_ORDERS = ["si", "df", "ii"] as const satisfies readonly QuestionOrder[];
/**
 * Dr-LLaVA App. C and its evaluation scripts: standard; diagnosis first (the whole sequence
 * reversed, Eval/model_vqa_conversation_reverse_orders.py); improvised — every question once
 * in a seeded random order (…_random_orders.py), or 2 to all of them drawn without
 * replacement in a random order (…_random_and_samples.py).
 */
export type QuestionOrder = (typeof QUESTION_ORDERS)[number];

/** One question of a conversation, with the category its answer should be labelled with. */
export interface TurnSpec {
  question: string;
  step: string;
  expected: string;
  /** The dataset's gold answer, when it has one (Dr-LLaVA's records do). */
  goldAnswer?: string;
  /** Where `expected` came from: the gold answer's label (the reference's rule) or, when that is no-match or there is none, the record's path. */
  expectedFrom?: "gold-answer" | "path";
  /** The gold answer names no category the labeller knows (the path stood in): reported, never a silent no-match. */
  goldUnlabelled?: true;
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
  expectedFrom?: "gold-answer" | "path";
  goldUnlabelled?: true;
  /** The clinician's statement put before the question (a --hypothesis probe), and what it claimed. */
  hypothesis?: TurnStatement;
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
