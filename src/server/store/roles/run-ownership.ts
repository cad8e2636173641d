/**
 * Run ownership: how often each unfinished case's run was started. Which process runs a
 * case is the job engine's business (BullMQ's locks with REDIS_URL, the one process without);
 * the store only counts starts, so that a case whose run kills its process (hostile input,
 * a bug) is quarantined after a few starts instead of killing every process that picks it
 * up (the crash quarantine, docs/operations.md). Only the case service uses it.
 */
export interface RunOwnership {
  /** The unfinished cases' ids (queued or running), oldest first (no case content: cheap to list). */
  listUnfinishedIds(): Promise<string[]>;
  /**
   * Count one more start of the case's run, atomically and before it runs; returns the
   * count including this start, or null for a finished or missing case.
   */
  countRunStart(id: string): Promise<number | null>;
  /** Take back one counted start (a graceful stop interrupted the run: it did not crash); never below 0. */
  uncountRunStart(id: string): Promise<void>;
}
