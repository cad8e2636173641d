import { createHash, createHmac, createPrivateKey, createPublicKey, sign, timingSafeEqual, verify, type KeyObject } from "node:crypto";
import { MedmmvError } from "../../core/contracts/errors.js";

/**
 * The access trail's anchor outside the store: every event's hash signed with a key the
 * store never holds (MEDMMV_AUDIT_SIGNING_KEY(_FILE), in the service's environment only).
 * Each event's hash covers every event before it in its tenant's chain, so one valid
 * signature vouches for the whole chain up to that event: an intruder who can write the
 * store but not read the key can no longer re-hash a rewritten chain into one that verifies.
 *
 * The key is either an Ed25519 private key (PEM, e.g. `openssl genpkey -algorithm ed25519`)
 * or a secret of at least 32 characters, used with HMAC-SHA256. A signature reads
 * `<algorithm>:<key id>:<base64url>`; the key id (a digest, never the key) says which key
 * signed, so a key change shows as such rather than as tampering.
 */
export interface AccessSigner {
  algorithm: "ed25519" | "hmac-sha256";
  /** 16 hex digits identifying the key (Ed25519: of its public key; HMAC: an HMAC of a fixed label). */
  keyId: string;
  /** The signature of one chain position (tenant, seq and the event's hash). */
  sign(head: SignedPosition): string;
  /** Whether `signature` is this key's signature of `head`. */
  verify(head: SignedPosition, signature: string): SignatureCheck;
}

export interface SignedPosition {
  tenant: string;
  seq: number;
  hash: string;
}

export type SignatureCheck = "valid" | "invalid" | "other-key" | "malformed";

export const MIN_HMAC_KEY_CHARS = 32;

/** What is signed: a fixed label, so a signature of the trail is never one of anything else. */
function message(h: SignedPosition): Buffer {
  return Buffer.from(`medmmv-access-head:v1\n${JSON.stringify([h.tenant, h.seq, h.hash])}`, "utf8");
}

function parseSignature(s: string): { algorithm: string; keyId: string; bytes: Buffer } | null {
  const m = /^(ed25519|hmac-sha256):([0-9a-f]{16}):([A-Za-z0-9_-]+)$/.exec(s);
  return m ? { algorithm: m[1]!, keyId: m[2]!, bytes: Buffer.from(m[3]!, "base64url") } : null;
}

/** A signer for the configured key; a key that is neither an Ed25519 PEM nor a long enough secret is a configuration error. */
export function accessSigner(key: string): AccessSigner {
  const text = key.trim();
  if (text.includes("-----BEGIN")) return ed25519Signer(text);
  if (text.length < MIN_HMAC_KEY_CHARS) {
    throw new MedmmvError("CONFIG_INVALID", `invalid configuration: MEDMMV_AUDIT_SIGNING_KEY must be an Ed25519 private key (PEM) or a secret of at least ${MIN_HMAC_KEY_CHARS} characters (e.g. openssl rand -base64 32)`);
  }
  const keyId = createHmac("sha256", text).update("medmmv-audit-key-id").digest("hex").slice(0, 16);
  const mac = (h: SignedPosition) => createHmac("sha256", text).update(message(h)).digest();
  return {
    algorithm: "hmac-sha256",
    keyId,
    sign: (h) => `hmac-sha256:${keyId}:${mac(h).toString("base64url")}`,
    verify: (h, s) => {
      const p = parseSignature(s);
      if (!p || p.algorithm !== "hmac-sha256") return p ? "other-key" : "malformed";
      if (p.keyId !== keyId) return "other-key";
      const want = mac(h);
      return p.bytes.length === want.length && timingSafeEqual(p.bytes, want) ? "valid" : "invalid";
    },
  };
}

function ed25519Signer(pem: string): AccessSigner {
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(pem);
  } catch {
    throw new MedmmvError("CONFIG_INVALID", "invalid configuration: MEDMMV_AUDIT_SIGNING_KEY is a PEM block but not a private key (make one with: openssl genpkey -algorithm ed25519)");
  }
  if (privateKey.asymmetricKeyType !== "ed25519") {
    throw new MedmmvError("CONFIG_INVALID", `invalid configuration: MEDMMV_AUDIT_SIGNING_KEY is a ${privateKey.asymmetricKeyType ?? "symmetric"} key; use an Ed25519 one (openssl genpkey -algorithm ed25519) or an HMAC secret`);
  }
  const publicKey = createPublicKey(privateKey);
  const keyId = createHash("sha256").update(publicKey.export({ type: "spki", format: "der" })).digest("hex").slice(0, 16);
  return {
    algorithm: "ed25519",
    keyId,
    sign: (h) => `ed25519:${keyId}:${sign(null, message(h), privateKey).toString("base64url")}`,
    verify: (h, s) => {
      const p = parseSignature(s);
      if (!p || p.algorithm !== "ed25519") return p ? "other-key" : "malformed";
      if (p.keyId !== keyId) return "other-key";
      return verify(null, message(h), publicKey, p.bytes) ? "valid" : "invalid";
    },
  };
}
