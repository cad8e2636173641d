/**
 * What answer-state.ts says about a result, as data: declared apart from the rule so the
 * browser bundle (which reads it from the page's payload) imports types only.
 */
export type AnswerState = "confident" | "uncertain" | "incomplete";

/** A part of the case no agent read, and why (the provider's words stay in provenance.failures). */
export interface NotExamined {
  /** The agent (branch) that did not run to the end. */
  agent: string;
  /** What that leaves unread, in words: "the image", "the notes", "the literature". */
  what: string;
  /** "content filter", "model refused", or the failure's code. */
  why: string;
}

export interface AnswerSummary {
  state: AnswerState;
  /** Each reason behind the state, in words (empty when confident). */
  reasons: string[];
  /** "(B) Acute pericarditis", or null without an answer. */
  answer: string | null;
  /** How many runs chose the answer, of how many (null without an answer or runs). */
  runs: { chose: number; of: number } | null;
  /** The selected path's claims by the detector's verdict (rejected: contradicted by the evidence). */
  claims: { supported: number; unsupported: number; rejected: number };
  notExamined: NotExamined[];
  /**
   * How the answer's models met the case's images when not as images: "the answer's model
   * (deepseek-chat) saw a description of the images made by gpt-4o, not the images". A
   * described image is read, by another model: not an unread one. Null otherwise.
   */
  imageNote: string | null;
}

