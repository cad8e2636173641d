import type { CaseRecords } from "./roles/case-records.js";
import type { CaseEvents } from "./roles/case-events.js";
import type { RunOwnership } from "./roles/run-ownership.js";
import type { WorkflowCheckpoints } from "./roles/workflow-checkpoints.js";
import type { ConversationTurns } from "./roles/conversation-turns.js";
import type { TokenLedger } from "./roles/token-ledger.js";
import type { ResponseCacheStore } from "./roles/response-cache-store.js";
import type { AccessTrail } from "./roles/access-trail.js";

/**
 * Persistence for cases, results, evidence graphs, event history, usage, images and the
 * model-response cache. One interface, two backends (SQLite embedded default, Postgres);
 * one conformance suite (test/server/store/conformance/) runs against both. The interface
 * is the sum of role interfaces (src/server/store/roles/), so a consumer that needs one
 * role can say so in its type; the types they define are re-exported here, so consumers
 * keep importing from this file.
 */
export { TERMINAL_STATUSES } from "./roles/case-records.js";
export type { CaseStatus, CaseRecord, StoredImageRef, StoredCaseInput, NewCase, ListCasesQuery, CaseSummary, CaseRecords, CardFeedbackOutcome } from "./roles/case-records.js";
export type { CaseProgress, CaseEvent, CaseEvents } from "./roles/case-events.js";
export type { RunOwnership } from "./roles/run-ownership.js";
export type { WorkflowCheckpoints } from "./roles/workflow-checkpoints.js";
export type { ConversationTurn, NewTurn, ConversationTurns } from "./roles/conversation-turns.js";
export type { TokenLedger } from "./roles/token-ledger.js";
export type { CachedResponse, ResponseCacheStore } from "./roles/response-cache-store.js";
export type { AccessActor, AccessEvent, AccessHead, AccessOutcome, AccessQuery, AccessTrail, NewAccessEvent } from "./roles/access-trail.js";

export interface CaseStore extends CaseRecords, CaseEvents, RunOwnership, WorkflowCheckpoints, ConversationTurns, TokenLedger, ResponseCacheStore, AccessTrail {
  readonly backend: "sqlite" | "postgres";
  /** Create tables if missing. Idempotent; safe to call from several processes. */
  init(): Promise<void>;
  close(): Promise<void>;
  /** Cheap round trip used by /readyz. */
  ping(): Promise<void>;
  /** The backend's query plan of a case search (the bench shows it uses an index). */
  explainListCases(q: import("./roles/case-records.js").ListCasesQuery): Promise<string> | string;
}
