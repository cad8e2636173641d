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
  /** Its `medmmv eval` flags, in help order. */
  flags?: readonly StudyFlag[];
  /** Its runner options from the parsed flags (commander's camel-cased names). */
  runOptions?(flags: Readonly<Record<string, unknown>>): Record<string, unknown>;
}
