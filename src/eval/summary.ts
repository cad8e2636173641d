import type { InputPin, ProductPin } from "./input-pins.js";
import type { EvalMetrics } from "./metrics-types.js";
import type { HealthBenchSummary } from "./healthbench/summary.js";
import type { OpenMatchSummary } from "./open/types.js";
import type { SelectionReport } from "./sampling.js";
import type { StagewiseSummary } from "./stagewise/metrics.js";
import type { ThrottleStats } from "./throttle.js";
import type { ConversationMetrics } from "./conversation/metrics.js";
import type { QuestionOrder } from "./conversation/types.js";
import type { StudyIntervals } from "./study-intervals.js";

export const SUMMARY_JSON = "summary.json";
export const SUMMARY_MD = "summary.md";
/** summary.md's tables as a self-contained HTML page with the plots (summary-html.ts). */
export const SUMMARY_HTML = "summary.html";


/** DIR/summary.json: the metrics plus everything needed to say what produced them. */
export interface EvalSummary extends EvalMetrics {
  schema: "medmmv-eval-summary/1";
  label: string;
  method: string;
  /** Every planned (id, run) has a record that did not fail. */
  complete: boolean;
  /** Planned (id, run) pairs; null when summarised from a folder without its plan. */
  planned: number | null;
  dataset: {
    name: string;
    input: string;
    images: string | null;
    missingImages: string;
    /** Facts the adapter decided while reading, e.g. MedMCQA's cop base and why. */
    details: Record<string, unknown>;
    /** Failed records that never reached the model: unreadable records, missing or invalid images. */
    readErrors: number;
    /** Items read with a warning (e.g. run text-only because images were missing). */
    warnings: number;
    selection: SelectionReport | null;
    /** The input file's SHA-256 and size when the run started (absent in older folders). */
    inputFile?: InputPin;
  };
  /** The product that produced the run: version, git commit, source hash (absent in older folders). */
  product?: ProductPin;
  /** Later sessions (--resume) on other code than `product`: the records come from more than one product. */
  resumedWith?: ProductPin[];
  config: Record<string, unknown>;
  models: Record<string, string>;
  /** Models without a price: their calls are not in the cost figures (absent when every model is priced). */
  unpriced?: string[];
  raters: string[];
  prompts: Record<string, string>;
  throttle: ThrottleStats | null;
  /** Wall time of the session that wrote this summary. */
  elapsedMs: number | null;
  startedAt: string | null;
  finishedAt: string;
  version: string;
  /** ClinHallu stage-wise diagnosis (docs/evaluation.md#stage-wise-hallucination-diagnosis-clinhallu), when the records carry it. */
  stagewise?: StagewiseSummary;
  /** Conversation evals (docs/architecture.md#clinical-pathways-and-conversations): A_Q, A_C, A_D, H_cc per question order. */
  conversation?: Partial<Record<QuestionOrder, ConversationMetrics>>;
  /** HealthBench (docs/evaluation.md#healthbench): the clipped mean score, its theme and axis breakdowns, cost per example. */
  healthbench?: HealthBenchSummary;
  /** --open: the equivalence matcher against exact match on the items both graded. */
  openMatch?: OpenMatchSummary;
  /** 95 % bootstrap intervals (over items) of the studies' figures: H_V/H_K/H_R, A_Q/A_C/A_D/H_cc, the robustness rates. */
  studyIntervals?: StudyIntervals;
}
