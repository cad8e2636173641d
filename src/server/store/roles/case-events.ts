/**
 * Case events: the ordered history of a case's run (rollouts, evidence, verdicts, status
 * changes) and its latest progress. The case service appends events and progress as the
 * pipeline runs; the HTTP layer replays them to SSE clients from a sequence number, so a
 * reconnecting client resumes where it left off.
 */

export interface CaseProgress {
  /** Pipeline steps done so far, e.g. rollouts finished, evidence agents finished. */
  step: string;
  done: number;
  total: number;
}

export interface CaseEvent {
  caseId: string;
  /** 1-based, strictly increasing per case; the SSE `id:`. */
  seq: number;
  type: string; // e.g. "rollout", "evidence", "hd-verdict", "repair", "scores", "final", "status"
  data: Record<string, unknown>;
  at: string; // ISO
}

export interface CaseEvents {
  /**
   * Append an event; the store assigns seq. With `progress`, the case's progress is set in
   * the same write (one transaction per pipeline event instead of two).
   */
  appendEvent(caseId: string, type: string, data: Record<string, unknown>, progress?: CaseProgress): Promise<CaseEvent>;
  /** Events with seq > afterSeq, in order. */
  listEvents(caseId: string, afterSeq?: number): Promise<CaseEvent[]>;
  /** Overwrite the case's progress (kept on the case row, read back with the case). */
  setProgress(id: string, progress: CaseProgress): Promise<void>;
}
