/**
 * Run ownership: which process may run an unfinished case. Several processes can share one
 * store, so the case service claims a case before running it, renews its leases while the
 * pipeline runs, releases them on a graceful stop, and polls the unfinished cases' leases to
 * adopt the cases of a process that died. Only the case service (and the resume at boot) uses it.
 */
/**
 * Which process may run an unfinished case, and until when. Several processes can share
 * one store (SQLite file or Postgres): each claims a case before running it and renews
 * the claim while it runs, so a case is run by one process at a time, and the cases of a
 * process that died are adopted by another once its leases expire.
 */
export interface CaseLease {
  /** The process's runner id (host, pid and a random part). */
  runner: string;
  /** Epoch ms. */
  expiresAtMs: number;
}

export interface UnfinishedLease {
  id: string;
  runner: string | null;
  expiresAtMs: number | null;
}

export interface RunOwnership {
  /** Who holds each unfinished case, oldest case first (no case content: cheap to poll). */
  listUnfinishedLeases(): Promise<UnfinishedLease[]>;
  /**
   * Claim an unfinished case, atomically. Succeeds when nobody holds it, its lease expired
   * before `nowMs`, `lease.runner` already holds it, or `takeOverFrom` holds it (a runner
   * the caller knows to be dead). False otherwise, and for a finished or missing case.
   */
  claimCase(id: string, lease: CaseLease, nowMs: number, takeOverFrom?: string): Promise<boolean>;
  /** Extend `runner`'s leases on `ids` to `expiresAtMs`; returns the ids it no longer holds (taken over or deleted). */
  renewLeases(runner: string, ids: string[], expiresAtMs: number): Promise<string[]>;
  /** Give up `runner`'s leases on `ids` (a graceful stop), so another process may adopt them at once. */
  releaseLeases(runner: string, ids: string[]): Promise<void>;
}
