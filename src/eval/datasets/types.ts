import type { ClinicalCase } from "../../core/contracts/clinical-case.js";
import type { ProbeFields } from "../probes/types.js";
import type { ItemStagewise } from "../stagewise/types.js";
import type { HealthBenchItem } from "../healthbench/types.js";

/** The expected answer of a benchmark item; `text` is what open and closed items are graded on. */
export interface GoldAnswer {
  kind: "choice" | "closed" | "open";
  /** The correct letter for `choice` items. */
  option?: string;
  text: string;
}

export interface EvalItem {
  /** Stable and unique within the file, so that `--resume` can skip finished items. */
  id: string;
  /** Images are `{ id, path }` resolved against the images folder, or absent. */
  case: ClinicalCase;
  gold: GoldAnswer;
  /** Grouping keys for per-stratum accuracy, e.g. body_system, answer_type, images. */
  strata: Record<string, string>;
  warnings?: string[];
  /** Set by robustness probes (src/eval/probes), copied onto the item's records. */
  probe?: ProbeFields;
  /** ClinHallu items: the reference trace (and a --traces trace) for stage-wise diagnosis. */
  stagewise?: ItemStagewise;
  /** HealthBench items: the conversation, rubric and tags the rubric grader needs. */
  healthbench?: HealthBenchItem;
}

/** Where each field of a generic JSONL record lives; dotted paths reach into objects. */
export interface JsonlFieldMap {
  id?: string;
  question?: string;
  options?: string;
  answer?: string;
  /** Field holding "choice" | "closed" | "open"; inferred from the answer when absent. */
  answerKind?: string;
  notes?: string;
  images?: string;
  /** Fields copied into `strata`, keyed by their field name. */
  strata?: string[];
}

export interface AdapterOptions {
  imagesDir?: string;
  /** "error" (default): an item whose images are not found becomes an ItemError. */
  missingImages?: "error" | "text-only";
  /** MedMCQA `cop` base; "auto" (default) detects it over the whole file. */
  medmcqaCopBase?: 0 | 1 | "auto";
  fieldMap?: JsonlFieldMap;
  /** ClinHallu: a model_cot.jsonl whose traces are judged instead of generated (--traces). */
  tracesFile?: string;
}

export type DatasetName = "medxpertqa" | "medframeqa" | "medqa" | "medmcqa" | "pathvqa" | "vqa-rad" | "jsonl" | "clinhallu" | "healthbench";
/** Multi-turn conversation datasets (docs/architecture.md#clinical-pathways-and-conversations), run by src/eval/conversation rather than the item runner. */
export type ConversationDatasetName = "drllava" | "conversation";

/** A per-item problem: the run records it and goes on. */
export interface ItemError {
  id: string;
  error: { code: string; message: string };
}

export interface DatasetAdapter {
  name: DatasetName;
  /** Items in file order. File-level problems (unreadable file, conflicting cop values) throw MedmmvError. */
  read(file: string, opts: AdapterOptions): AsyncIterable<EvalItem | ItemError>;
  /** Facts decided while reading (e.g. MedMCQA's cop base), for the report; call after `read` finishes. */
  describe?(): Record<string, unknown>;
}

export function isItemError(x: EvalItem | ItemError): x is ItemError {
  return "error" in x;
}
