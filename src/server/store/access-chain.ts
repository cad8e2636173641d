import { createHash } from "node:crypto";
import { canonicalJson } from "../../core/contracts/canonical-json.js";
import { MedmmvError } from "../../core/contracts/errors.js";
import type { AccessEvent, NewAccessEvent } from "./roles/access-trail.js";
import type { AccessSigner } from "./access-signing.js";
import { searchInstant, searchText } from "./store-rows.js";

/**
 * The hash of one access event: sha256 over the canonical JSON of every field but the hash
 * itself, the previous event's hash included. Both stores and the verifier use this one
 * function, so a row reads back to the same bytes it was hashed from (timestamps are kept
 * as the ISO text they were hashed as, detail as its JSON text).
 */
export function accessEventHash(e: Omit<AccessEvent, "hash" | "signature">): string {
  const body = {
    v: 1,
    tenant: e.tenant,
    seq: e.seq,
    at: e.at,
    actor: { type: e.actor.type, id: e.actor.id, sub: e.actor.sub ?? null },
    action: e.action,
    caseId: e.caseId,
    outcome: e.outcome,
    client: e.client,
    requestId: e.requestId,
    detail: e.detail,
    prevHash: e.prevHash,
  };
  return createHash("sha256").update(canonicalJson(body)).digest("hex");
}

/**
 * A string as a UTF-8 TEXT column keeps it: a lone surrogate (a JWT `sub` may hold one: JSON
 * escapes allow it) is stored by both databases as U+FFFD, and Postgres refuses NUL. The
 * event is hashed as it will read back, or the chain would break at it for good.
 */
export function storableText(s: string): string;
export function storableText(s: string | null): string | null;
export function storableText(s: string | null): string | null {
  return s === null ? null : s.replace(/\p{Cs}|\0/gu, "\uFFFD");
}

/** The event that follows `head` (the tenant's last seq and hash) in its chain, signed when the service holds the key. */
export function chainedEvent(e: NewAccessEvent, head: { lastSeq: number; lastHash: string }, at: string, signer: AccessSigner | null = null): AccessEvent {
  const unhashed = {
    ...e,
    tenant: storableText(e.tenant),
    actor: { type: e.actor.type, id: storableText(e.actor.id), sub: storableText(e.actor.sub ?? null) },
    action: storableText(e.action),
    caseId: storableText(e.caseId),
    client: storableText(e.client),
    requestId: storableText(e.requestId),
    seq: head.lastSeq + 1,
    at,
    prevHash: head.lastHash,
  };
  const hash = accessEventHash(unhashed);
  return { ...unhashed, hash, signature: signer ? signer.sign({ tenant: unhashed.tenant, seq: unhashed.seq, hash }) : null };
}

/** A stored access row, backend-neutral (detail still its JSON text, as hashed). */
export interface AccessRow {
  tenant: string;
  seq: number;
  at: string;
  actor_type: string;
  actor_id: string;
  actor_sub: string | null;
  action: string;
  case_id: string | null;
  outcome: string;
  client: string | null;
  request_id: string | null;
  detail: string;
  prev_hash: string;
  hash: string;
  signature: string | null;
}

export function accessRowValues(e: AccessEvent): unknown[] {
  return [e.tenant, e.seq, e.at, e.actor.type, e.actor.id, e.actor.sub ?? null, e.action, e.caseId, e.outcome, e.client, e.requestId, JSON.stringify(e.detail), e.prevHash, e.hash, e.signature];
}
export const ACCESS_COLUMNS = "tenant, seq, at, actor_type, actor_id, actor_sub, action, case_id, outcome, client, request_id, detail, prev_hash, hash, signature";

/** A row as read back. A detail that is no longer JSON (a tampered row) reads as a string, so the verifier can name the row instead of crashing. */
export function accessFromRow(r: AccessRow): AccessEvent {
  let detail: AccessEvent["detail"];
  try {
    detail = JSON.parse(r.detail) as AccessEvent["detail"];
  } catch {
    detail = { unreadable: r.detail };
  }
  return {
    tenant: r.tenant,
    seq: Number(r.seq),
    at: r.at,
    actor: { type: r.actor_type as AccessEvent["actor"]["type"], id: r.actor_id, sub: r.actor_sub },
    action: r.action,
    caseId: r.case_id,
    outcome: r.outcome as AccessEvent["outcome"],
    client: r.client,
    requestId: r.request_id,
    detail,
    prevHash: r.prev_hash,
    hash: r.hash,
    signature: r.signature ?? null,
  };
}

/** Keyset cursor over (tenant, seq). */
export function encodeAccessCursor(e: { tenant: string; seq: number }): string {
  return Buffer.from(JSON.stringify([e.tenant, e.seq]), "utf8").toString("base64url");
}

export function decodeAccessCursor(cursor: string): { tenant: string; seq: number } {
  try {
    const v: unknown = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
    if (Array.isArray(v) && v.length === 2 && typeof v[0] === "string" && !v[0].includes("\0") && Number.isSafeInteger(v[1]) && (v[1] as number) >= 0) return { tenant: v[0], seq: v[1] as number };
  } catch {
    // the typed error below
  }
  throw new MedmmvError("INVALID_INPUT", "invalid cursor: pass the nextCursor of the previous page unchanged");
}

export function checkAccessLimit(limit: number): number {
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new MedmmvError("INVALID_INPUT", "limit must be an integer between 1 and 1000");
  return limit;
}

/** The WHERE of an access query, with the backend's placeholder style. */
export function accessWhere(q: { tenant: string | null; caseId?: string; from?: string; to?: string; actorId?: string; action?: string; cursor?: string | null }, param: (value: unknown) => string): string {
  const where: string[] = [];
  if (q.tenant !== null) where.push(`tenant = ${param(q.tenant)}`);
  if (q.caseId !== undefined) where.push(`case_id = ${param(searchText("case id", q.caseId))}`);
  if (q.from !== undefined) where.push(`at >= ${param(searchInstant("from", q.from))}`);
  if (q.to !== undefined) where.push(`at < ${param(searchInstant("to", q.to))}`);
  if (q.actorId !== undefined) where.push(`actor_id = ${param(searchText("actor", q.actorId))}`);
  if (q.action !== undefined) where.push(`action = ${param(searchText("action", q.action))}`);
  if (q.cursor) {
    const after = decodeAccessCursor(q.cursor);
    where.push(`(tenant > ${param(after.tenant)} OR (tenant = ${param(after.tenant)} AND seq > ${param(after.seq)}))`);
  }
  return where.length ? `WHERE ${where.join(" AND ")}` : "";
}
