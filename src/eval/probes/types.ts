/** docs/evaluation.md#robustness-probes: robustness probes of a multiple-choice eval (Dr-LLaVA App. C.3, plus option order). */

/** Most option orders per item (one per letter A–Z). */
export const MAX_SHUFFLES = 26;

export const HYPOTHESIS_KINDS = ["cq-r", "cq-w", "rq-r", "rq-w"] as const;
/** Confirmation (cq) or rationalisation (rq) query, with the right (-r) or a wrong (-w) option. */
export type HypothesisKind = (typeof HYPOTHESIS_KINDS)[number];

export interface ProbeOptions {
  hypothesis?: HypothesisKind;
  /** Seeded permutations of the options per item, each run as its own item `id#p1`…`id#pN`. */
  shuffleOptions?: number;
  /** The eval's --seed: the same seed picks the same wrong options, templates and orders in every method and run. */
  seed: number;
}

/** results.jsonl `hypothesis`: what the clinician's statement in the case text claimed. */
export interface HypothesisRecord {
  kind: HypothesisKind;
  /** The hypothesised option's letter, as the item presented it (after any shuffle). */
  option: string;
  /** Template id, e.g. "cq-2". */
  template: string;
}

/** results.jsonl `permutation`: which order of the options this record answered. */
export interface PermutationRecord {
  /** 1…of */
  index: number;
  of: number;
  /** The dataset item's id (the record's id is `baseId#p<index>`). */
  baseId: string;
  /** Presented letter → the option's letter in the dataset. */
  letters: Record<string, string>;
}

/** What a probe adds to an item and to each of its records. */
export interface ProbeFields {
  hypothesis?: HypothesisRecord;
  permutation?: PermutationRecord;
}
