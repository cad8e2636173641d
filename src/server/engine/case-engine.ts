import type { CaseEvent } from "../store/case-store.js";

/**
 * How a run of a case ended, as the engine must know it: `done` (finished, failed, quarantined
 * or deleted: the job is over) or `handed-back` (a graceful stop interrupted it; the case stays
 * unfinished with its checkpoints, and the engine gives it to the next free worker at once).
 */
export type RunOutcome = "done" | "handed-back";

/** Runs one case from the store (fresh or from its checkpoint); the signal aborts it. */
export type CaseRunner = (caseId: string, signal: AbortSignal) => Promise<RunOutcome>;

/** What the engine tells every replica, whichever of them the news started on. */
export interface EngineBus {
  /** A case's event, as stored: replicas with an SSE client on that case forward it. */
  onEvent(listener: (event: CaseEvent) => void): void;
  /** A case was deleted: the replica running it stops its calls; streams on it end. */
  onDeleted(listener: (caseId: string) => void): void;
}

/** The listeners of the bus, as every engine keeps them in its own process; `deliver*` calls them. */
export class BusListeners implements EngineBus {
  readonly #events: Array<(event: CaseEvent) => void> = [];
  readonly #deleted: Array<(caseId: string) => void> = [];

  onEvent(listener: (event: CaseEvent) => void): void {
    this.#events.push(listener);
  }

  onDeleted(listener: (caseId: string) => void): void {
    this.#deleted.push(listener);
  }

  deliverEvent(event: CaseEvent): void {
    for (const l of this.#events) l(event);
  }

  deliverDeleted(caseId: string): void {
    for (const l of this.#deleted) l(caseId);
  }
}

/**
 * The thing that decides where and when each accepted case runs. The case service commits
 * a case to the store, then enqueues it; the engine calls the runner (here or on another
 * replica), at most once at a time per case. Two engines: the local one (one process, its
 * own cases, resumed at its next start) and the BullMQ one on Redis (several replicas).
 */
export interface CaseEngine extends EngineBus {
  readonly kind: "local" | "bullmq";
  /** Start taking work: resume the unfinished cases (local) or start the worker and the reconciler (BullMQ). */
  start(runner: CaseRunner): Promise<void>;
  /** Queue an accepted case; enqueueing a case already queued or running does nothing. */
  enqueue(caseId: string): Promise<void>;
  /** Tell every replica (this one included) a stored event. */
  publishEvent(event: CaseEvent): void;
  /** Tell every replica (this one included) that a case is deleted; drops its queued job. */
  publishDeleted(caseId: string): Promise<void>;
  /** Queue depth as the engine sees it, for /metrics (`stalled`: stalled jobs this replica found since it started). */
  counts(): Promise<{ waiting: number; active: number; delayed: number; failed: number; stalled: number }>;
  /** Stop taking work; resolves once every running case has returned from its runner. */
  close(): Promise<void>;
}
