/**
 * The access trail: one event per access to a case (or a search), per tenant, append-only
 * and hash-chained. Each event carries the hash of its tenant's previous event, and the
 * store keeps each tenant's head (last seq and hash), so a changed, removed or appended-by-
 * hand row breaks the chain where it happened (`medmmv audit verify`). Events outlive the
 * cases they name: deleting or purging a case leaves its trail. An event never holds case
 * content: ids, codes, addresses and counts only.
 */

/** Who made the access: an API key (its id), an EHR (issuer and `sub`), a view link (its id), or the service itself. */
export interface AccessActor {
  type: "key" | "ehr" | "link" | "system";
  id: string;
  /** The EHR's `sub` (user), or for a view link the key id that issued it. */
  sub?: string | null;
}

export type AccessOutcome = "success" | "denied" | "failed";

export interface NewAccessEvent {
  tenant: string;
  actor: AccessActor;
  /** create, read, events, graph, fhir, turns, view, view-link, export, delete, search, audit-read, purge. */
  action: string;
  caseId: string | null;
  outcome: AccessOutcome;
  /** The client address (request.ip), null for the service's own actions. */
  client: string | null;
  requestId: string | null;
  /** Small, content-free facts: an HTTP status, a format, a count. */
  detail: Record<string, string | number | boolean | null>;
}

export interface AccessEvent extends NewAccessEvent {
  /** 1-based, gap-free per tenant. */
  seq: number;
  at: string;
  /** Hash of the tenant's previous event ("" for its first). */
  prevHash: string;
  hash: string;
  /** The signature of this chain position with MEDMMV_AUDIT_SIGNING_KEY (src/server/store/access-signing.ts); null when the service held no key. */
  signature: string | null;
}

export interface AccessQuery {
  /** One tenant's events; null: every tenant (the CLI). */
  tenant: string | null;
  caseId?: string;
  /** ISO instants, `from` inclusive, `to` exclusive. */
  from?: string;
  to?: string;
  actorId?: string;
  action?: string;
  /** Opaque cursor of the previous page. */
  cursor?: string | null;
  limit: number; // 1..1000
}

export interface AccessHead {
  tenant: string;
  lastSeq: number;
  lastHash: string;
}

export interface AccessTrail {
  /** Append one event to its tenant's chain (one transaction: the event and the head move together). */
  appendAccess(e: NewAccessEvent): Promise<AccessEvent>;
  /** Events oldest first (tenant, then seq), in pages. */
  listAccess(q: AccessQuery): Promise<{ items: AccessEvent[]; nextCursor: string | null }>;
  /** Every tenant's head, for verification. */
  accessHeads(): Promise<AccessHead[]>;
}
