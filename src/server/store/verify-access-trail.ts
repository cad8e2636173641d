import { accessEventHash } from "./access-chain.js";
import type { AccessTrail } from "./roles/access-trail.js";

/** Where a chain breaks: the first event (by tenant, then seq) that does not follow from the one before it. */
export interface AccessChainBreak {
  tenant: string;
  /** The event at fault (for a removed event: the seq that is missing). */
  seq: number;
  problem: string;
}

export interface AccessVerification {
  ok: boolean;
  tenants: number;
  events: number;
  /** The first break; null when every chain holds. */
  firstBreak: AccessChainBreak | null;
}

/**
 * Walks every tenant's chain in order, in pages (memory bounded by the page), and checks
 * that each event's seq follows the previous one (a removed row leaves a gap), that it
 * names the previous event's hash, and that its own hash is the hash of what it holds (a
 * changed byte breaks it); finally that each chain ends where its head says (a removed
 * last event, or a chain of a tenant without a head).
 */
export async function verifyAccessTrail(trail: AccessTrail, pageSize = 1000): Promise<AccessVerification> {
  const heads = new Map((await trail.accessHeads()).map((h) => [h.tenant, h]));
  let events = 0;
  const seen = new Set<string>();
  let prev: { tenant: string; seq: number; hash: string } | null = null;
  const fail = (b: AccessChainBreak): AccessVerification => ({ ok: false, tenants: seen.size, events, firstBreak: b });
  const endOf = (p: { tenant: string; seq: number; hash: string }): AccessChainBreak | null => {
    const head = heads.get(p.tenant);
    if (!head) return { tenant: p.tenant, seq: p.seq, problem: "the tenant's chain has no head record: its events were written behind the service's back" };
    if (head.lastSeq !== p.seq) return { tenant: p.tenant, seq: p.seq + 1, problem: `the chain ends at event ${p.seq} but its head records event ${head.lastSeq}: event ${p.seq + 1} onwards was removed` };
    if (head.lastHash !== p.hash) return { tenant: p.tenant, seq: p.seq, problem: "the last event's hash differs from the one its head recorded: the event was changed" };
    return null;
  };
  let cursor: string | null = null;
  do {
    const pg: Awaited<ReturnType<AccessTrail["listAccess"]>> = await trail.listAccess({ tenant: null, cursor, limit: pageSize });
    for (const e of pg.items) {
      if (prev && prev.tenant !== e.tenant) {
        const b = endOf(prev);
        if (b) return fail(b);
        prev = null;
      }
      if (!prev) {
        seen.add(e.tenant);
        if (e.seq !== 1) return fail({ tenant: e.tenant, seq: 1, problem: `the chain starts at event ${e.seq}: events 1 to ${e.seq - 1} were removed` });
        if (e.prevHash !== "") return fail({ tenant: e.tenant, seq: e.seq, problem: "the first event names a previous hash" });
      } else {
        if (e.seq !== prev.seq + 1) return fail({ tenant: e.tenant, seq: prev.seq + 1, problem: `event ${prev.seq + 1} is missing (event ${e.seq} follows event ${prev.seq})` });
        if (e.prevHash !== prev.hash) return fail({ tenant: e.tenant, seq: e.seq, problem: `the event does not name event ${prev.seq}'s hash: one of the two was changed` });
      }
      const { hash, ...rest } = e;
      if (accessEventHash(rest) !== hash) return fail({ tenant: e.tenant, seq: e.seq, problem: "the event's content does not match its hash: it was changed" });
      events++;
      prev = { tenant: e.tenant, seq: e.seq, hash };
    }
    cursor = pg.nextCursor;
  } while (cursor);
  if (prev) {
    const b = endOf(prev);
    if (b) return fail(b);
  }
  for (const h of heads.values()) {
    if (!seen.has(h.tenant) && h.lastSeq > 0) return fail({ tenant: h.tenant, seq: 1, problem: `the head records ${h.lastSeq} events but none is stored: they were removed` });
  }
  return { ok: true, tenants: seen.size, events, firstBreak: null };
}
