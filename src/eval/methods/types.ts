import type { PreparedCase } from "../../case/schema.js";
import type { ResultRecord } from "../results-file.js";

export const METHOD_NAMES = ["medmmv", "cot", "self-consistency"] as const;
export type MethodName = (typeof METHOD_NAMES)[number];

/** What a method produced for one item; the runner adds the gold answer, grading and ratings. */
export type MethodOutput = Pick<ResultRecord, "status" | "answer" | "usage" | "cu" | "answerSupport" | "stability" | "hallucinations" | "errors" | "error" | "abstentionReason"> & {
  /** The reasoning and answer as a rater should read them. */
  rationale: string;
};

/**
 * A way of answering a prepared case. `run` never throws for a model or branch failure
 * (it returns status "failed" with the error and what the attempt cost); it throws only
 * when the signal aborts, so a cancelled item is not recorded as an answer.
 */
export interface EvalMethod {
  name: MethodName;
  /** Prompt templates whose hashes identify this method's prompt version. */
  prompts: string[];
  run(c: PreparedCase, signal: AbortSignal): Promise<MethodOutput>;
}

export const NO_HALLUCINATIONS: MethodOutput["hallucinations"] = { visual: 0, knowledge: 0, reasoning: 0, total: 0, resolved: 0 };
