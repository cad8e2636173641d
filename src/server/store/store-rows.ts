import { createHash } from "node:crypto";
import { MedmmvError } from "../../core/contracts/errors.js";
import type { LoadedImage } from "../../core/contracts/clinical-case.js";
import type { CaseEvent, CaseProgress, CaseRecord, CaseStatus, ConversationTurn, NewCase, NewTurn } from "./case-store.js";
import { TERMINAL_STATUSES } from "./roles/case-records.js";

/**
 * The terminal statuses as an SQL list, for the writes that must never touch a finished
 * case: once a case has its result, a late replica (one that lost its lock, or ran a
 * duplicate job) cannot overwrite it, regress its status or add a second final event.
 */
export const TERMINAL_SQL = TERMINAL_STATUSES.map((s) => `'${s}'`).join(", ");

/**
 * Backend-neutral pieces shared by the SQLite and Postgres stores: the clock, cursors,
 * argument checks and row → record mapping. Each backend hands rows over with JSON
 * columns already parsed and timestamps as ISO strings.
 */


export interface CursorPosition {
  createdAt: string;
  id: string;
}

/** Keyset cursor: the last item of a page. Later inserts sort before it, so pages stay stable. */
export function encodeCursor(p: CursorPosition): string {
  return Buffer.from(JSON.stringify([p.createdAt, p.id]), "utf8").toString("base64url");
}

/** How a store writes created_at (toISOString of a year 1-9999): a cursor's instant must read the same, or Postgres refuses it (503). */
const STORED_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

export function decodeCursor(cursor: string): CursorPosition {
  try {
    const v: unknown = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
    if (Array.isArray(v) && v.length === 2 && typeof v[0] === "string" && typeof v[1] === "string") {
      if (STORED_INSTANT.test(v[0]) && !Number.isNaN(Date.parse(v[0])) && !v[1].includes("\0")) return { createdAt: v[0], id: v[1] };
    }
  } catch {
    // fall through to the typed error
  }
  throw new MedmmvError("INVALID_INPUT", "invalid cursor");
}

/**
 * A search's text as both stores can compare it: Postgres refuses NUL in text (an error that
 * would answer 503), so it is refused here, for both, as bad input.
 */
export function searchText(name: string, v: string): string {
  if (v.includes("\0")) throw new MedmmvError("INVALID_INPUT", `${name} must not contain NUL characters`);
  return v;
}

/** Years both stores' timestamps hold (Postgres reads toISOString's 6-digit years as bad input). */
const MIN_INSTANT_MS = new Date("0001-01-01T00:00:00.000Z").getTime();
const MAX_INSTANT_MS = new Date("9999-12-31T23:59:59.999Z").getTime();

/** A search bound (`from`, `to`) as the ISO instant it stands for; a date is its midnight UTC. */
export function searchInstant(name: string, v: string): string {
  const t = Date.parse(v);
  if (Number.isNaN(t)) throw new MedmmvError("INVALID_INPUT", `${name} must be a date or an ISO 8601 instant, e.g. 2026-11-01 or 2026-11-01T00:00:00Z`);
  if (t < MIN_INSTANT_MS || t > MAX_INSTANT_MS) throw new MedmmvError("INVALID_INPUT", `${name} must be between the years 0001 and 9999`);
  return new Date(t).toISOString();
}

export function checkLimit(limit: number): number {
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
    throw new MedmmvError("INVALID_INPUT", "limit must be an integer between 1 and 100");
  }
  return limit;
}

/** Content addressing is only worth something if the address is right. */
export function imageBytes(image: LoadedImage): Buffer {
  const bytes = Buffer.from(image.data, "base64");
  const actual = createHash("sha256").update(bytes).digest("hex");
  if (actual !== image.sha256.toLowerCase()) {
    throw new MedmmvError("INVALID_INPUT", "image sha256 does not match its bytes");
  }
  return bytes;
}

export function imageFromRow(row: ImageRow): LoadedImage {
  const image: LoadedImage = {
    // Stored images are shared between cases, so the per-case id and caption live in the
    // case's input (StoredImageRef); the content address stands in for the id here.
    id: row.sha256,
    sha256: row.sha256,
    mimeType: row.mime_type as LoadedImage["mimeType"],
    data: Buffer.from(row.bytes).toString("base64"),
  };
  if (row.width !== null) image.width = row.width;
  if (row.height !== null) image.height = row.height;
  return image;
}

export interface ImageRow {
  sha256: string;
  mime_type: string;
  bytes: Uint8Array;
  width: number | null;
  height: number | null;
}

/** Distinct image hashes a case refers to (the case_images links). */
export function imageHashes(c: NewCase): string[] {
  return [...new Set(c.input.images.map((i) => i.sha256))];
}

/** A case row with JSON columns parsed and timestamps as ISO strings. */
export interface CaseRow {
  id: string;
  owner: string;
  tenant: string;
  submitted_by: string;
  status: string;
  input: unknown;
  options: unknown;
  progress: unknown;
  result: unknown;
  full_graph: unknown;
  error: unknown;
  idempotency_key: string | null;
  request_hash: string | null;
  created_at: string;
  updated_at: string;
}

export function recordFromRow(r: CaseRow): CaseRecord {
  return {
    id: r.id,
    owner: r.owner,
    tenant: r.tenant || r.owner,
    submittedBy: r.submitted_by,
    status: r.status as CaseStatus,
    input: r.input as CaseRecord["input"],
    options: r.options as CaseRecord["options"],
    progress: (r.progress ?? null) as CaseProgress | null,
    result: (r.result ?? null) as CaseRecord["result"],
    fullEvidenceGraph: (r.full_graph ?? null) as CaseRecord["fullEvidenceGraph"],
    error: (r.error ?? null) as CaseRecord["error"],
    idempotencyKey: r.idempotency_key,
    requestHash: r.request_hash,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

/** Rows fetched with limit + 1 tell whether another page exists without a count query. */
export function page<R extends { created_at: string; id: string }>(
  rows: R[],
  limit: number,
): { rows: R[]; nextCursor: string | null } {
  if (rows.length <= limit) return { rows, nextCursor: null };
  const kept = rows.slice(0, limit);
  const last = kept[kept.length - 1]!;
  return { rows: kept, nextCursor: encodeCursor({ createdAt: last.created_at, id: last.id }) };
}

export interface EventRow {
  case_id: string;
  seq: number;
  type: string;
  data: unknown;
  at: string;
}

export function eventFromRow(r: EventRow): CaseEvent {
  return { caseId: r.case_id, seq: Number(r.seq), type: r.type, data: r.data as Record<string, unknown>, at: r.at };
}

export interface TurnRow {
  case_id: string;
  turn: number | string;
  data: unknown;
  at: string;
}

/** A turn row: the answer's fields live in one JSON column beside the key and time. */
export function turnFromRow(r: TurnRow): ConversationTurn {
  const d = r.data as Omit<ConversationTurn, "caseId" | "turn" | "at">;
  return { caseId: r.case_id, turn: Number(r.turn), question: d.question, answer: d.answer, step: d.step, category: d.category, contextConflict: d.contextConflict, evidence: d.evidence, details: d.details, at: r.at };
}

export function turnData(t: NewTurn): Omit<ConversationTurn, "caseId" | "turn" | "at"> {
  return { question: t.question, answer: t.answer, step: t.step, category: t.category, contextConflict: t.contextConflict, evidence: t.evidence, details: t.details };
}

export function duplicateTurn(caseId: string, turn: number, cause?: unknown): MedmmvError {
  return new MedmmvError("CONFLICT", `turn ${turn} of case ${caseId} already exists (another turn was added at the same time); fetch the turns and ask again`, {
    cause,
    details: { reason: "duplicate-turn" },
  });
}

export function notFound(id: string): MedmmvError {
  return new MedmmvError("NOT_FOUND", `case ${id} not found`);
}

export function closedError(): MedmmvError {
  return new MedmmvError("STORE_FAILED", "the case store is closed (or was never initialised)");
}

export function duplicateId(id: string, cause?: unknown): MedmmvError {
  return new MedmmvError("CONFLICT", `a case with id ${id} already exists`, {
    cause,
    details: { reason: "duplicate-id" },
  });
}

export function duplicateIdempotencyKey(cause?: unknown): MedmmvError {
  return new MedmmvError("CONFLICT", "a case with this idempotency key already exists for this owner", {
    cause,
    details: { reason: "duplicate-idempotency-key" },
  });
}

export function missingImage(cause?: unknown): MedmmvError {
  return new MedmmvError("STORE_FAILED", "the case refers to an image that is not stored (call putImage first)", {
    cause,
    details: { reason: "image-missing" },
  });
}

/** Wrap a driver error without echoing SQL parameters (they can hold case content). */

/** Every status with its count, zero for the ones no case is in. */
export function statusCounts(rows: ReadonlyArray<{ status: CaseStatus; n: number }>): Record<CaseStatus, number> {
  const out: Record<CaseStatus, number> = { queued: 0, running: 0, completed: 0, abstained: 0, failed: 0 };
  for (const r of rows) if (r.status in out) out[r.status] = Number(r.n);
  return out;
}
