import type { PreparedCase } from "../../core/contracts/clinical-case.js";
import type { EvalItem } from "../datasets/types.js";
import type { ResultRecord } from "../results-file.js";
import type { DiagnosisResult } from "../../core/contracts/diagnosis-result.js";

export const METHOD_NAMES = ["medmmv", "cot", "self-consistency", "stagewise"] as const;
export type MethodName = (typeof METHOD_NAMES)[number];

/** One MedMMV item's DiagnosisResult with everything the agents found (not only the selected path's subgraph). */
export interface SavedDiagnosis {
  result: DiagnosisResult;
  fullEvidenceGraph: Record<string, unknown> | null;
}

/** What a method produced for one item; the runner adds the gold answer, grading and ratings. */
export type MethodOutput = Pick<ResultRecord, "status" | "answer" | "usage" | "cu" | "answerSupport" | "stability" | "hallucinations" | "errors" | "error" | "abstentionReason" | "stagewise" | "healthbench" | "openMatch" | "calls" | "callsNotKept"> & {
  /** The reasoning and answer as a rater should read them. */
  rationale: string;
  /** The reply a person reads (MedMMV's composed, verified reply; CoT's full answer); graded by HealthBench instead of the short answer. */
  reply?: string;
  /** Set by methods that grade themselves (stage-wise: ClinHallu's answer judge); otherwise the runner grades. */
  correct?: boolean;
  /** The final path's steps with their stage tags (MedMMV, staged CoT), for --stage-judge. */
  steps?: Array<{ text: string; stage: "visual" | "knowledge" | "reasoning" }>;
  /** The selected path's evidence subgraph rendered for a prompt (MedMMV, for --stage-judge). */
  evidence?: string;
  /** The whole DiagnosisResult with the full evidence graph (MedMMV, --save-results): written beside results.jsonl, never into it. */
  diagnosis?: SavedDiagnosis;
};

/**
 * What the runner hands a method that works in phases (stage-wise diagnosis): the item
 * (its reference trace), the checkpoint a killed run left for this (id, run), and a way to
 * append a new checkpoint to results.jsonl, so a resumed run does not pay again for
 * finished phases.
 */
export interface MethodRunContext {
  item: EvalItem;
  previous?: ResultRecord;
  /** Append the work so far (written as an unfinished record: status "failed", error INCOMPLETE). */
  checkpoint(partial: MethodOutput): Promise<void>;
}

/**
 * A way of answering a prepared case. `run` never throws for a model or branch failure
 * (it returns status "failed" with the error and what the attempt cost); it throws only
 * when the signal aborts, so a cancelled item is not recorded as an answer.
 */
export interface EvalMethod {
  name: MethodName;
  /** Prompt templates whose hashes identify this method's prompt version. */
  prompts: string[];
  run(c: PreparedCase, signal: AbortSignal, context?: MethodRunContext): Promise<MethodOutput>;
}

export const NO_HALLUCINATIONS: MethodOutput["hallucinations"] = { visual: 0, knowledge: 0, reasoning: 0, total: 0, resolved: 0 };

/** The diagnostics of an output that has none (no CU, support, stability, detector or branch errors). */
export function noDiagnostics(): Pick<MethodOutput, "cu" | "answerSupport" | "stability" | "hallucinations" | "errors"> {
  return { cu: null, answerSupport: null, stability: null, hallucinations: { ...NO_HALLUCINATIONS }, errors: [] };
}

/** A method's output for an item that failed: no answer, what the attempt cost, and why. */
export function failedOutput(error: { code: string; message: string }, usage: MethodOutput["usage"]): MethodOutput {
  return { status: "failed", answer: null, usage, ...noDiagnostics(), error, rationale: "" };
}
