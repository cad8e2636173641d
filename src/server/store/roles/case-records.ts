/**
 * Case records: the cases themselves (input, options, status, result, full evidence graph)
 * and the images they reference, stored once by content hash. The case service creates,
 * finishes and deletes cases through it; the HTTP routes, the CDS Hooks service and the CLI
 * (report, demo) read cases and images back.
 */
import type { ClinicalCase, LoadedImage } from "../../../core/contracts/clinical-case.js";
import type { DiagnosisResult } from "../../../core/contracts/diagnosis-result.js";
import type { CaseEvent, CaseProgress } from "./case-events.js";

export type CaseStatus = "queued" | "running" | "completed" | "abstained" | "failed";
export const TERMINAL_STATUSES: readonly CaseStatus[] = ["completed", "abstained", "failed"];

export interface CaseRecord {
  id: string;
  /** Hash of the API key that created the case ("cli" or "eval" for local runs); never the key. */
  owner: string;
  /** The team the case belongs to: its auditors and admins see it. A case from before teams: its owner. */
  tenant: string;
  /** Id of the key (or EHR issuer) that submitted it, as the access trail names it; "" for local runs. */
  submittedBy: string;
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

export type StoredImageRef = { id: string; sha256: string; mimeType: LoadedImage["mimeType"]; caption?: string; dicom?: LoadedImage["dicom"] };
export type StoredCaseInput = Omit<ClinicalCase, "images"> & { id: string; images: StoredImageRef[] };

export interface NewCase {
  id: string;
  owner: string;
  /** Default: the owner (a caller without a team is its own tenant). */
  tenant?: string;
  submittedBy?: string;
  input: StoredCaseInput;
  options: Record<string, unknown>;
  idempotencyKey?: string | null;
  requestHash?: string | null;
}

/**
 * A case search, newest first with keyset pages. `tenant` scopes it to a team; `owner`
 * further to one submitter (a clinician's own cases). The filters match the columns written
 * when a case is created and when its result is saved, so the search never reads results.
 */
export interface ListCasesQuery {
  tenant?: string;
  owner?: string;
  limit: number; // 1..100
  /** Opaque cursor returned by the previous page. */
  cursor?: string | null;
  status?: CaseStatus;
  /** Created at or after / before (ISO). */
  from?: string;
  to?: string;
  /** The answer's option letter, or its text (case-insensitive, whole). */
  answer?: string;
  abstained?: boolean;
  /** At least this many claims of the chosen path not supported by the evidence. */
  minUnsupportedClaims?: number;
  /** A model that ran in any role. */
  model?: string;
  /** A prompt template hash the case ran with. */
  promptHash?: string;
  pathway?: string;
  /** The submitter's key id. */
  submittedBy?: string;
  /** true: only cases where an agent was stopped by a content filter or refused by the model; false: only those without. */
  filteredOrRefused?: boolean;
  /** The last CDS Hooks feedback on the case's card. */
  feedback?: CardFeedbackOutcome;
}
/** What a clinician did with a case's CDS card, as the EHR's feedback says (CDS Hooks 2.0.1 §feedback). */
export type CardFeedbackOutcome = "accepted" | "overridden";
/** One row of a search: what a reviewer triages by, never the notes. */
export interface CaseSummary {
  id: string;
  status: CaseStatus;
  answer: { option: string | null; text: string } | null;
  createdAt: string;
  updatedAt: string;
  finishedAt?: string | null;
  answerSupport?: number | null;
  abstained?: boolean | null;
  unsupportedClaims?: number | null;
  hallucinations?: number | null;
  models?: string[];
  pathway?: string | null;
  submittedBy?: string;
  /** Whether an agent was stopped by a content filter or refused (null: not finished, or finished before this was recorded). */
  filteredOrRefused?: boolean | null;
  /** The last CDS Hooks feedback on its card, if any. */
  feedback?: CardFeedbackOutcome | null;
}

export interface CaseRecords {
  /** Store an image once by content hash (no-op if present). */
  putImage(image: LoadedImage): Promise<void>;
  getImage(sha256: string): Promise<LoadedImage | null>;

  /** Insert a new case in status "queued". Throws MedmmvError CONFLICT if the id exists. */
  createCase(c: NewCase): Promise<CaseRecord>;
  getCase(id: string): Promise<CaseRecord | null>;
  findByIdempotencyKey(owner: string, key: string): Promise<CaseRecord | null>;
  listCases(q: ListCasesQuery): Promise<{ items: CaseSummary[]; nextCursor: string | null }>;
  /**
   * Cases stored before their key had a team (tenant = owner) join `tenant`, named as
   * submitted by `submittedBy`: run at start for each key of MEDMMV_API_KEYS_FILE. Returns how many moved.
   */
  adoptCases(owner: string, tenant: string, submittedBy: string): Promise<number>;
  /** Ids (and tenants) of cases created before `before` (ISO), oldest first, at most `limit`: retention's work list. */
  listCreatedBefore(before: string, limit: number): Promise<Array<{ id: string; tenant: string }>>;
  /** How many cases, in any status, belong to another owner than `owner` (the demo's check for a store of its own). */
  countCasesNotOwnedBy(owner: string): Promise<number>;
  /** How many cases are in each status, every owner together (for /metrics: counts only, no ids). */
  countCasesByStatus(): Promise<Record<CaseStatus, number>>;
  /**
   * Cases not in a terminal status, oldest first, whole records: the tests and fault
   * trials read what is left unfinished through it.
   */
  listUnfinished(): Promise<CaseRecord[]>;
  /**
   * Set the status (and error) of an unfinished case. A terminal case is final: nothing is
   * written and the answer is false, so a late writer (a replica that lost the case, a
   * duplicate run) can neither regress it nor fail it after it completed.
   */
  setStatus(id: string, status: CaseStatus, error?: { code: string; message: string } | null): Promise<boolean>;
  /**
   * Store the final result and full graph and set the status from result.status, atomically.
   * With `finalEvent`, that event is appended in the same transaction: a process killed
   * between the two would otherwise leave a finished case without its final event (it is
   * terminal, so it is never resumed to write it). A case that is terminal already keeps
   * its first result: nothing is written and the answer is null.
   */
  saveResult(id: string, result: DiagnosisResult, fullEvidenceGraph: Record<string, unknown> | null, finalEvent?: { type: string; data: Record<string, unknown> }): Promise<CaseEvent | null>;
  /** Record the last feedback on the case's CDS card (searchable); false when there is no such case. */
  setFeedback(id: string, outcome: CardFeedbackOutcome): Promise<boolean>;
  /** Remove the case, its events, its checkpoints (thread id = case id), and images no other case uses. */
  deleteCase(id: string): Promise<boolean>;
}
