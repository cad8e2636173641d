/**
 * ClinHallu's stage-wise trace (docs/evaluation.md#stage-wise-hallucination-diagnosis-clinhallu): visual recognition (V), knowledge recall (K),
 * reasoning integration (R), and the answer the reasoning ends in. Stage keys are the
 * eval's `visual | knowledge | reasoning`; ClinHallu's file keys are mapped at the edges.
 */
export { STAGES, type StageKey } from "../agents/stage-judge.js";
import { STAGES, type StageKey } from "../agents/stage-judge.js";

export interface StageTrace {
  visual: string;
  knowledge: string;
  reasoning: string;
  answer: string;
}

/** The replacement settings: Rep-V (gold V), Rep-K (own V + gold K), Rep-VK (gold V + gold K). */
export const REPLACEMENTS = ["V", "K", "VK"] as const;
export type ReplacementKey = (typeof REPLACEMENTS)[number];

/** How a trace came to be: one structured call, ClinHallu's free-text protocol, a --traces file, or a method's path. */
export type TraceFormat = "structured" | "text" | "external" | "path";

/** One trace with ClinHallu's validity verdict and the answer judge's verdict on it. */
export interface JudgedTrace {
  stages: StageTrace;
  /** The free text as the model wrote it (text format), or the structured trace rendered in ClinHallu's headers. */
  raw: string;
  valid: boolean;
  /** ClinHallu's reason string ("OK", "Missing required step: [Knowledge Recall]", …). */
  validation: string;
  /** Generation attempts spent (1 + re-tries for invalid traces); 0 for a trace read from a file. */
  attempts: number;
  /** 1 correct, 0 wrong, -1 the judge failed; null while not judged (or not judged because invalid). */
  answerCorrect: 0 | 1 | -1 | null;
  answerReason: string;
  /** "letter" when the MC letter decided without a judge call. */
  answerBy?: "letter" | "judge";
  /** The generation call failed for good: an empty, invalid trace (ClinHallu's `api_failed` record). */
  apiFailed?: true;
  /** Only on a checkpoint: an invalid attempt with re-tries left (a resumed run goes on from it). */
  retrying?: true;
}

/** The stage judge's verdict on one stage. */
export interface StageJudgment {
  hallucinated: 0 | 1;
  reason: string;
  /** How the verdict came about: a judge call, an empty stage (no call), or a judge that failed (counted hallucinated). */
  by: "judge" | "empty" | "judge-failed";
}

export type StageJudgments = Partial<Record<StageKey, StageJudgment>>;

export interface ReplacementRun {
  trace: JudgedTrace;
  judged: StageJudgments;
}

/** `results.jsonl` → `stagewise` (docs/evaluation.md#stage-wise-hallucination-diagnosis-clinhallu). Phases fill it in order; a killed run resumes from what is there. */
export interface StagewiseRecord {
  format: TraceFormat;
  /** Whether the item had a reference (gold) trace to judge against. */
  hasReference: boolean;
  trace: JudgedTrace | null;
  judged: StageJudgments;
  replacements: Partial<Record<ReplacementKey, ReplacementRun>>;
  /** --stage-judge: the judged method's own status, kept while its stages are judged. */
  methodStatus?: "completed" | "abstained";
  /** --stage-judge on MedMMV: its path's evidence, the knowledge and reasoning judges' context (dropped when judging ends). */
  evidence?: string;
}

/** Which stages ClinHallu's step judge scores per target (TARGET_STEP_MAP). */
export const JUDGED_STAGES: Record<"baseline" | ReplacementKey, readonly StageKey[]> = {
  baseline: STAGES,
  V: ["knowledge", "reasoning"],
  K: ["visual", "reasoning"],
  VK: ["reasoning"],
};

/** A trace read from a ClinHallu `model_cot.jsonl` (--traces). */
export interface ExternalTrace {
  stages: StageTrace;
  raw: string;
  valid: boolean;
  validation: string;
}

/** What a ClinHallu item brings besides the case: its reference trace and, with --traces, a trace to judge. */
export interface ItemStagewise {
  reference: StageTrace | null;
  /** With --traces: the file's trace for this sample, or null when the file has none for it. */
  external?: ExternalTrace | null;
}
