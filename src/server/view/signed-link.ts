import { createHmac, timingSafeEqual } from "node:crypto";
import { MedmmvError } from "../../core/contracts/errors.js";

/**
 * Short-lived links to a case's audit view, for opening it in a browser that cannot send the
 * API key header. A token is `base64url(payload).base64url(HMAC-SHA256(secret, domain‖payload))`;
 * the payload names the case, the owner (the key hash that created it, so a link never widens
 * access beyond the key that minted it), the id of that key (so the server can refuse links of
 * a key that is no longer configured) and the expiry. Tokens carry no secret and are not
 * encrypted: case ids, owner hashes and key ids are not confidential, the signature is what counts.
 */
export interface ViewLinkSubject {
  caseId: string;
  owner: string;
  /** Id of the credential the link was made with (never the key itself). */
  keyId: string;
}

export interface ViewLinkClaims extends ViewLinkSubject {
  /** Expiry, epoch seconds. */
  expiresAt: number;
}

// v2: links name their key id; v1 links (without it) no longer verify.
const DOMAIN = "medmmv:view-link:v2:";
/** An auditor's link to the auditor pages: the same token shape, its own domain, so neither kind verifies as the other. */
const AUDITOR_DOMAIN = "medmmv:auditor-link:v1:";
/** What an auditor link names in place of a case. */
const AUDITOR_SCOPE = "*auditor-pages*";
const MAX_TTL_SEC = 7 * 24 * 3600;
/** As MEDMMV_VIEW_LINK_SECRET requires (config.ts MIN_SECRET_CHARS). */
const MIN_SECRET_BYTES = 32;
/** Generous for any real payload; bounds the work done on hostile input. */
const MAX_TOKEN_CHARS = 2048;
const B64URL = /^[A-Za-z0-9_-]+$/;

function secretBytes(secret: string | Buffer): Buffer {
  const b = typeof secret === "string" ? Buffer.from(secret, "utf8") : secret;
  if (b.length < MIN_SECRET_BYTES) {
    throw new MedmmvError("CONFIG_INVALID", `the view-link secret must be at least ${MIN_SECRET_BYTES} bytes`);
  }
  return b;
}

function mac(secret: Buffer, payload: string, domain: string): Buffer {
  return createHmac("sha256", secret).update(domain).update(payload).digest();
}

/** A token for `caseId` owned by `owner` (made with key `keyId`), valid for `ttlSec` seconds from `nowMs`. */
export function signViewLink(subject: ViewLinkSubject, secret: string | Buffer, ttlSec: number, nowMs = Date.now()): string {
  return sign(subject, secret, ttlSec, nowMs, DOMAIN);
}

/** A token for the auditor pages of the key `keyId` (owner `owner`): its tenant's cases and trail, as that key may read them. */
export function signAuditorLink(subject: Omit<ViewLinkSubject, "caseId">, secret: string | Buffer, ttlSec: number, nowMs = Date.now()): string {
  return sign({ ...subject, caseId: AUDITOR_SCOPE }, secret, ttlSec, nowMs, AUDITOR_DOMAIN);
}

/** The claims of a valid, unexpired auditor link, else null. */
export function verifyAuditorLink(token: unknown, secret: string | Buffer, nowMs = Date.now()): Omit<ViewLinkClaims, "caseId"> | null {
  const claims = verify(token, secret, nowMs, AUDITOR_DOMAIN);
  if (!claims || claims.caseId !== AUDITOR_SCOPE) return null;
  const { caseId: _scope, ...rest } = claims;
  return rest;
}

function sign({ caseId, owner, keyId }: ViewLinkSubject, secret: string | Buffer, ttlSec: number, nowMs: number, domain: string): string {
  if ([caseId, owner, keyId].some((v) => typeof v !== "string" || v === "")) {
    throw new MedmmvError("INVALID_INPUT", "a view link needs a case id, an owner and a key id");
  }
  if (!Number.isInteger(ttlSec) || ttlSec <= 0 || ttlSec > MAX_TTL_SEC) {
    throw new MedmmvError("INVALID_INPUT", `view-link ttl must be a whole number of seconds in 1..${MAX_TTL_SEC}`);
  }
  const key = secretBytes(secret);
  const claims = { c: caseId, o: owner, k: keyId, e: Math.floor(nowMs / 1000) + ttlSec };
  const payload = Buffer.from(JSON.stringify(claims), "utf8").toString("base64url");
  const token = `${payload}.${mac(key, payload, domain).toString("base64url")}`;
  if (token.length > MAX_TOKEN_CHARS) throw new MedmmvError("INVALID_INPUT", "case id or owner too long for a view link");
  return token;
}

/**
 * The claims of a valid, unexpired token, else null (malformed, forged, signed with another
 * secret, or expired all look the same to the caller, who answers 401 / 404 either way).
 */
export function verifyViewLink(token: unknown, secret: string | Buffer, nowMs = Date.now()): ViewLinkClaims | null {
  return verify(token, secret, nowMs, DOMAIN);
}

function verify(token: unknown, secret: string | Buffer, nowMs: number, domain: string): ViewLinkClaims | null {
  const key = secretBytes(secret);
  if (typeof token !== "string" || token.length === 0 || token.length > MAX_TOKEN_CHARS) return null;
  const parts = token.split(".");
  if (parts.length !== 2) return null;
  const [payload, sig] = parts as [string, string];
  if (!B64URL.test(payload) || !B64URL.test(sig)) return null;
  const given = Buffer.from(sig, "base64url");
  // One spelling per signature: lenient base64 decoding must not make a token malleable.
  if (given.toString("base64url") !== sig) return null;
  const expected = mac(key, payload, domain);
  // Length first: timingSafeEqual throws on unequal lengths, and a length is no secret.
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  let claims: unknown;
  try {
    claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
  } catch {
    return null;
  }
  if (typeof claims !== "object" || claims === null) return null;
  const { c, o, k, e } = claims as Record<string, unknown>;
  if ([c, o, k].some((v) => typeof v !== "string" || v === "") || typeof e !== "number" || !Number.isInteger(e)) return null;
  if (Math.floor(nowMs / 1000) >= e) return null;
  return { caseId: c as string, owner: o as string, keyId: k as string, expiresAt: e };
}
