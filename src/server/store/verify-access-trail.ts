import { accessEventHash } from "./access-chain.js";
import type { AccessSigner } from "./access-signing.js";
import type { AccessEvent, AccessTrail } from "./roles/access-trail.js";
import type { AccessAnchor } from "./access-anchor.js";

/** One place a chain breaks: an event (by tenant and seq) that does not follow from the one before it, or fails its signature. */
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
  /** Events whose signature was checked and holds (0 without a key). */
  signed: number;
  /** Whether signatures were checked (a key was given). */
  keyed: boolean;
  /** Anchored heads found in the trail, as anchored. */
  anchored: number;
  /** Every break, in trail order, up to MAX_LISTED_BREAKS; `breakCount` counts them all. */
  breaks: AccessChainBreak[];
  breakCount: number;
  /** The first break; null when every chain holds. */
  firstBreak: AccessChainBreak | null;
}

/** Breaks listed in full; past it they are counted (a rewritten trail of a million events must not print a million lines). */
export const MAX_LISTED_BREAKS = 1000;

/**
 * Walks every tenant's chain in order, in pages (memory bounded by the page), and names every
 * break, not only the first: an event whose seq does not follow the previous one (a removed
 * row leaves a gap), that does not name the previous event's hash, or whose own hash is not
 * the hash of what it holds (a changed byte); a chain that does not end where its head says.
 *
 * With the signing key (`signer`), also: every signature must be the key's signature of its
 * event, and each chain must end in a signed event. An event's hash covers every event before
 * it, so the signature of the last event vouches for the whole chain, and one who can write
 * the store but lacks the key can neither invent, remove nor re-hash events without the
 * events after the change failing here. What the key cannot show alone is a chain cut back
 * to an earlier signed event (its head moved back too): `anchor`, a head printed earlier by
 * `medmmv audit anchor` and kept outside the store, must still be in the trail as it was.
 */
export async function verifyAccessTrail(trail: AccessTrail, opts: { signer?: AccessSigner | null; anchor?: AccessAnchor | null; pageSize?: number } = {}): Promise<AccessVerification> {
  const signer = opts.signer ?? null;
  const pageSize = opts.pageSize ?? 1000;
  const heads = new Map((await trail.accessHeads()).map((h) => [h.tenant, h]));
  const anchored = new Map((opts.anchor?.heads ?? []).map((h) => [`${h.tenant}\n${h.seq}`, h]));
  const anchoredSeen = new Set<string>();
  const breaks: AccessChainBreak[] = [];
  let breakCount = 0;
  const report = (b: AccessChainBreak) => {
    breakCount++;
    if (breaks.length < MAX_LISTED_BREAKS) breaks.push(b);
  };
  let events = 0;
  let signed = 0;
  const seen = new Set<string>();
  let prev: { tenant: string; seq: number; hash: string } | null = null;
  /** The chain's run of events since its last validly signed one (with a key), and whether an unsigned one in it is not named yet. */
  let unsignedFrom: number | null = null;
  let unnamedUnsigned = false;

  const endOf = (p: { tenant: string; seq: number; hash: string }) => {
    if (signer && unsignedFrom !== null && unnamedUnsigned) {
      report({
        tenant: p.tenant,
        seq: unsignedFrom,
        problem: `events ${unsignedFrom} to ${p.seq} carry no valid signature and no signed event follows them: they were written or re-hashed without the key (if the key was set after they were written, the tenant's next event signs them)`,
      });
    }
    unsignedFrom = null;
    unnamedUnsigned = false;
    const head = heads.get(p.tenant);
    if (!head) return report({ tenant: p.tenant, seq: p.seq, problem: "the tenant's chain has no head record: its events were written behind the service's back" });
    if (head.lastSeq > p.seq) return report({ tenant: p.tenant, seq: p.seq + 1, problem: `the chain ends at event ${p.seq} but its head records event ${head.lastSeq}: event ${p.seq + 1} onwards was removed` });
    if (head.lastSeq < p.seq) return report({ tenant: p.tenant, seq: head.lastSeq + 1, problem: `the chain goes on to event ${p.seq} but its head records event ${head.lastSeq}: events ${head.lastSeq + 1} onwards were written behind the service's back` });
    if (head.lastHash !== p.hash) report({ tenant: p.tenant, seq: p.seq, problem: "the last event's hash differs from the one its head recorded: the event was changed" });
  };

  const checkSignature = (e: AccessEvent, contentHolds: boolean) => {
    if (!signer) return;
    if (e.signature === null) {
      unsignedFrom ??= e.seq;
      unnamedUnsigned = true;
      return;
    }
    const check = signer.verify({ tenant: e.tenant, seq: e.seq, hash: e.hash }, e.signature);
    if (check === "valid" && contentHolds) {
      signed++;
      unsignedFrom = null;
      unnamedUnsigned = false;
      return;
    }
    if (check === "valid") return; // the content break is already named
    unsignedFrom ??= e.seq;
    report({
      tenant: e.tenant,
      seq: e.seq,
      problem:
        check === "other-key"
          ? `the event is signed by another key (${e.signature.split(":").slice(0, 2).join(":")}, not ${signer.algorithm}:${signer.keyId}): it was re-signed, or the key was changed`
          : check === "malformed"
            ? "the event's signature is not a signature: it was written without the key"
            : "the event's signature does not match it: it was invented or re-hashed without the key",
    });
  };

  let cursor: string | null = null;
  do {
    const pg: Awaited<ReturnType<AccessTrail["listAccess"]>> = await trail.listAccess({ tenant: null, cursor, limit: pageSize });
    for (const e of pg.items) {
      if (prev && prev.tenant !== e.tenant) {
        endOf(prev);
        prev = null;
      }
      if (!prev) {
        seen.add(e.tenant);
        if (e.seq !== 1) report({ tenant: e.tenant, seq: 1, problem: `the chain starts at event ${e.seq}: events 1 to ${e.seq - 1} were removed` });
        else if (e.prevHash !== "") report({ tenant: e.tenant, seq: e.seq, problem: "the first event names a previous hash" });
      } else {
        if (e.seq !== prev.seq + 1) report({ tenant: e.tenant, seq: prev.seq + 1, problem: e.seq > prev.seq + 1 ? `event${e.seq - prev.seq > 2 ? `s ${prev.seq + 1} to ${e.seq - 1} are` : ` ${prev.seq + 1} is`} missing (event ${e.seq} follows event ${prev.seq})` : `event ${e.seq} follows event ${prev.seq}: the chain was renumbered` });
        else if (e.prevHash !== prev.hash) report({ tenant: e.tenant, seq: e.seq, problem: `the event does not name event ${prev.seq}'s hash: one of the two was changed` });
      }
      const { hash, signature: _signature, ...rest } = e;
      const contentHolds = accessEventHash(rest) === hash;
      if (!contentHolds) report({ tenant: e.tenant, seq: e.seq, problem: "the event's content does not match its hash: it was changed" });
      checkSignature(e, contentHolds);
      const key = `${e.tenant}\n${e.seq}`;
      const a = anchored.get(key);
      if (a) {
        anchoredSeen.add(key);
        if (a.hash !== hash) report({ tenant: e.tenant, seq: e.seq, problem: "the event differs from the anchored head kept outside the store: the trail was rewritten up to it" });
      }
      events++;
      prev = { tenant: e.tenant, seq: e.seq, hash };
    }
    cursor = pg.nextCursor;
  } while (cursor);
  if (prev) endOf(prev);
  for (const h of heads.values()) {
    if (!seen.has(h.tenant) && h.lastSeq > 0) report({ tenant: h.tenant, seq: 1, problem: `the head records ${h.lastSeq} events but none is stored: they were removed` });
  }
  for (const [key, a] of anchored) {
    if (!anchoredSeen.has(key)) report({ tenant: a.tenant, seq: a.seq, problem: `the anchored head (event ${a.seq}) kept outside the store is no longer in the trail: the chain was cut back or removed` });
  }
  const ok = breakCount === 0;
  return { ok, tenants: seen.size, events, signed, keyed: signer !== null, anchored: anchoredSeen.size, breaks, breakCount, firstBreak: breaks[0] ?? null };
}
