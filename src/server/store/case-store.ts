import type { ClinicalCase, LoadedImage } from "../../core/contracts/clinical-case.js";
import type { DiagnosisResult } from "../../core/contracts/diagnosis-result.js";
import type { ConversationTurn, NewTurn } from "../../core/contracts/conversation-turn.js";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";

/**
 * Persistence for cases, results, evidence graphs, event history, usage, images and the
 * model-response cache. One interface, two backends (SQLite embedded default, Postgres);
 * one conformance suite (test/server/store/conformance.ts) runs against both.
 */
export type CaseStatus = "queued" | "running" | "completed" | "abstained" | "failed";
export const TERMINAL_STATUSES: readonly CaseStatus[] = ["completed", "abstained", "failed"];

export interface CaseProgress {
  /** Pipeline steps done so far, e.g. rollouts finished, evidence agents finished. */
  step: string;
  done: number;
  total: number;
}

export interface CaseRecord {
  id: string;
  /** Hash of the API key that created the case ("cli" or "eval" for local runs); never the key. */
  owner: string;
  status: CaseStatus;
  /** The case as accepted, images replaced by references ({id, sha256, mimeType, caption}). */
  input: StoredCaseInput;
  /** Pipeline options the case was accepted with (k, maxRepairs, ablations…). */
  options: Record<string, unknown>;
  progress: CaseProgress | null;
  result: DiagnosisResult | null;
  /** Full evidence graph E (graphology export), stored beside the result. */
  fullEvidenceGraph: Record<string, unknown> | null;
  error: { code: string; message: string } | null;
  idempotencyKey: string | null;
  /** sha256 of the canonical request body, to tell "same key, different body". */
  requestHash: string | null;
  createdAt: string; // ISO
  updatedAt: string; // ISO
}

export type StoredImageRef = { id: string; sha256: string; mimeType: LoadedImage["mimeType"]; caption?: string };
export type StoredCaseInput = Omit<ClinicalCase, "images"> & { id: string; images: StoredImageRef[] };

export interface NewCase {
  id: string;
  owner: string;
  input: StoredCaseInput;
  options: Record<string, unknown>;
  idempotencyKey?: string | null;
  requestHash?: string | null;
  /** The creating process's claim, written with the row, so no other process adopts the case before it starts. */
  lease?: CaseLease;
}

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

export interface CaseEvent {
  caseId: string;
  /** 1-based, strictly increasing per case; the SSE `id:`. */
  seq: number;
  type: string; // e.g. "rollout", "evidence", "hd-verdict", "repair", "scores", "final", "status"
  data: Record<string, unknown>;
  at: string; // ISO
}

export interface ListCasesQuery {
  owner: string;
  limit: number; // 1..100
  /** Opaque cursor returned by the previous page. */
  cursor?: string | null;
  status?: CaseStatus;
}
export interface CaseSummary {
  id: string;
  status: CaseStatus;
  answer: { option: string | null; text: string } | null;
  createdAt: string;
  updatedAt: string;
}


export type { ConversationTurn, NewTurn };

export interface CachedResponse {
  /** The raw provider message JSON we need to rebuild the reply, plus its usage. */
  value: Record<string, unknown>;
  createdAt: string;
}

export interface CaseStore {
  readonly backend: "sqlite" | "postgres";
  /** Create tables if missing. Idempotent; safe to call from several processes. */
  init(): Promise<void>;
  close(): Promise<void>;
  /** Cheap round trip used by /readyz. */
  ping(): Promise<void>;

  /** Store an image once by content hash (no-op if present). */
  putImage(image: LoadedImage): Promise<void>;
  getImage(sha256: string): Promise<LoadedImage | null>;

  /** Insert a new case in status "queued". Throws MedmmvError CONFLICT if the id exists. */
  createCase(c: NewCase): Promise<CaseRecord>;
  getCase(id: string): Promise<CaseRecord | null>;
  findByIdempotencyKey(owner: string, key: string): Promise<CaseRecord | null>;
  listCases(q: ListCasesQuery): Promise<{ items: CaseSummary[]; nextCursor: string | null }>;
  /** How many cases, in any status, belong to another owner than `owner` (the demo's check for a store of its own). */
  countCasesNotOwnedBy(owner: string): Promise<number>;
  /** Cases not in a terminal status (for resume at boot), oldest first. */
  listUnfinished(): Promise<CaseRecord[]>;
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
  setStatus(id: string, status: CaseStatus, error?: { code: string; message: string } | null): Promise<void>;
  setProgress(id: string, progress: CaseProgress): Promise<void>;
  /**
   * Store the final result and full graph and set the status from result.status, atomically.
   * With `finalEvent`, that event is appended in the same transaction: a process killed
   * between the two would otherwise leave a finished case without its final event (it is
   * terminal, so it is never resumed to write it).
   */
  saveResult(id: string, result: DiagnosisResult, fullEvidenceGraph: Record<string, unknown> | null, finalEvent?: { type: string; data: Record<string, unknown> }): Promise<CaseEvent | null>;
  /**
   * Drop the workflow checkpoints of a case (thread id = case id). A terminal case needs
   * none: its result, full graph and events say everything, and it is never resumed. A
   * case's checkpoints hold the workflow state after every step (a few hundred kilobytes
   * for a k = 5 case), so keeping them would make the store grow ten times faster.
   */
  pruneCheckpoints(id: string): Promise<void>;
  /** Remove the case, its events, its checkpoints (thread id = case id), and images no other case uses. */
  deleteCase(id: string): Promise<boolean>;

  /** Append an event; the store assigns seq. */
  appendEvent(caseId: string, type: string, data: Record<string, unknown>): Promise<CaseEvent>;
  /** Events with seq > afterSeq, in order. */
  listEvents(caseId: string, afterSeq?: number): Promise<CaseEvent[]>;

  /** Store turn `turn.turn` of a case's conversation: NOT_FOUND without the case, CONFLICT if that turn exists. */
  addTurn(caseId: string, turn: NewTurn): Promise<ConversationTurn>;
  /** The case's turns in order (none for a missing case). */
  listTurns(caseId: string): Promise<ConversationTurn[]>;

  /**
   * Record one use of a single-use token id (a CDS Hooks JWT's issuer and `jti`), atomically
   * across every process on the store: true the first time, false when it was already
   * recorded and has not expired by `nowMs` (a replay). Kept until `expiresAtMs` (the
   * token's own expiry plus clock tolerance), after which the row is pruned.
   */
  useTokenId(issuer: string, tokenId: string, expiresAtMs: number, nowMs: number): Promise<boolean>;

  /** Content-addressed model response cache. */
  getCachedResponse(key: string): Promise<CachedResponse | null>;
  putCachedResponse(key: string, value: Record<string, unknown>): Promise<void>;

  /** LangGraph checkpointer in the same backend (SqliteSaver / PostgresSaver). */
  checkpointer(): BaseCheckpointSaver;
}
