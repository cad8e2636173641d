/**
 * One question-and-answer turn of a conversation on a finished case (docs/architecture.md#clinical-pathways-and-conversations). Turns
 * are numbered from 1 per case; the caller gives the number, so two processes adding the
 * same turn at once cannot both succeed (the second gets CONFLICT).
 */
export interface ConversationTurn {
  caseId: string;
  turn: number;
  question: string;
  answer: string;
  /** The pathway step the question was about, when the case has a pathway. */
  step: string | null;
  /** The labeller's category for the answer at that step ("no-match" when none). */
  category: string | null;
  /** True when the labelled sequence of all turns so far leaves the pathway's valid paths. */
  contextConflict: boolean;
  /** Evidence nodes the answer's supported claims rest on. */
  evidence: Array<{ id: string; label: string }>;
  /** Anything else the answering code records (detector verdicts, conflict details, usage). */
  details: Record<string, unknown>;
  at: string; // ISO
}
export type NewTurn = Omit<ConversationTurn, "caseId" | "at">;
