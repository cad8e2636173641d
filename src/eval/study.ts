import type { EvalMetrics } from "./metrics-types.js";
import type { Row } from "./report-table.js";
import type { ResultRecord } from "./results-file.js";
import type { EvalSummary } from "./summary.js";

/** The shared section of summary.md a study's own section follows. */
export type MarkdownSlot = "headline" | "strata" | "hallucinations";

/**
 * One `medmmv eval` flag a study adds, described rather than built, so the eval wing does
 * not import the CLI: the eval command turns it into a commander option.
 */
export interface StudyFlag {
  flags: string;
  description: string;
  choices?: readonly string[];
  /** An integer in [min, max]. */
  int?: readonly [number, number];
  /** A comma-separated list, checked and converted by the study (throwing commander's InvalidArgumentError). */
  list?: (items: string[]) => unknown;
}

/**
 * One table of figures a study reports (ClinHallu's H_V/H_K/H_R and ΔAcc, Dr-LLaVA's
 * A_Q/A_C/A_D/H_cc for one order, the robustness rates), declared so that `eval report`
 * can compare two runs figure by figure on the items they share (src/eval/paired-figures.ts).
 * The table is the family of Holm's correction.
 */
export interface FigureTable {
  /** The table's name in the report; also what pairs it with the other run's table. */
  table: string;
  figures: ReadonlyArray<{
    name: string;
    /**
     * The figure is a share of items (each item's records, alone, give 0 or 1): McNemar's exact
     * test applies, on each shared item's first shared run.
     */
    perItem?: boolean;
  }>;
  /**
   * Every figure of the table, in `figures` order, from a set of records — a run's records
   * on the shared items, a bootstrap resample of them (an item drawn twice comes under ids of
   * its own, `id~d`), or one item's records; null where the figure cannot be computed.
   */
  values(records: readonly ResultRecord[]): ReadonlyArray<number | null>;
}

/**
 * What a study (robustness probes, stage-wise diagnosis, conversations…) contributes to the
 * shared eval machinery. Every part is optional; each is called for every run, and a study
 * whose records are absent contributes nothing (docs/evaluation.md).
 */
export interface EvalStudy {
  name: string;
  /** Its fields of the metrics, placed after the shared ones in summary.json. */
  metrics?(records: readonly ResultRecord[]): Partial<EvalMetrics>;
  /** Its fields at the end of summary.json. */
  summary?(records: readonly ResultRecord[]): Partial<EvalSummary>;
  /** Its section of summary.md, after the shared section `after`. */
  markdown?: { after: MarkdownSlot; section(s: EvalSummary): string[] };
  /** Why summary.md's hallucination counts are not a measurement for this run, or null. */
  hallucinationsNotMeasured?(s: Pick<EvalSummary, "dataset">): string | null;
  /** Its rows of the `eval report` comparison table. */
  rows?(summaries: readonly EvalSummary[]): Row[];
  /** Lines below the `eval report` table. */
  appendix?(summaries: readonly EvalSummary[], names: readonly string[]): string[];
  /**
   * `eval report`, before anything is printed: read what it needs from the folders and add it
   * to their summaries (printed with --json); returns its section below the table, if any.
   */
  compareFolders?(dirs: readonly string[], summaries: EvalSummary[]): Promise<((names: readonly string[]) => string) | null>;
  /** The tables of figures it reports for these records (one run's), for `eval report`'s paired comparison. */
  figureTables?(records: readonly ResultRecord[]): FigureTable[];
  /** Its `medmmv eval` flags, in help order. */
  flags?: readonly StudyFlag[];
  /** Its runner options from the parsed flags (commander's camel-cased names). */
  runOptions?(flags: Readonly<Record<string, unknown>>): Record<string, unknown>;
}
