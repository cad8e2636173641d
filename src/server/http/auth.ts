import { createHash, timingSafeEqual } from "node:crypto";
import type { FastifyRequest } from "fastify";
import { MedmmvError } from "../../core/contracts/errors.js";
import { issuerOwner } from "../cds-hooks/jwt-auth.js";

declare module "fastify" {
  interface FastifyRequest {
    /** sha256 of the caller's API key (the owner of the cases it creates); "" until authenticated. */
    owner: string;
  }
}

/** Owner used for every case when no API keys are configured (local, loopback-only use). */
export const OPEN_OWNER = "local";

function sha256(text: string): Buffer {
  return createHash("sha256").update(text, "utf8").digest();
}

/**
 * API keys from MEDMMV_API_KEYS. Only their sha256 digests are kept; a presented key is
 * hashed and compared with every digest in constant time (equal-length buffers, no early
 * exit), so neither the key's content nor its length leaks through timing.
 */
export class ApiKeys {
  readonly #digests: Buffer[];

  constructor(keys: readonly string[]) {
    this.#digests = keys.map(sha256);
  }

  get enabled(): boolean {
    return this.#digests.length > 0;
  }

  /** The owner id (hex sha256 of the key) if the key is valid, else null. */
  verify(presented: string): string | null {
    const d = sha256(presented);
    let match: Buffer | null = null;
    for (const known of this.#digests) if (timingSafeEqual(d, known)) match = known;
    return match ? match.toString("hex") : null;
  }

  /** Whether `owner` is the owner id of a key configured now (owner ids are digests, not secrets). */
  hasOwner(owner: string): boolean {
    return this.#digests.some((d) => d.toString("hex") === owner);
  }
}

/** The credential of an `Authorization: Bearer <credential>` header (an API key, or a CDS Hooks JWT). */
export const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;

/** Answers the owner of an authenticated request, or throws an UNAUTHORIZED MedmmvError saying what to send. */
export type Authenticate = (request: FastifyRequest) => Promise<string>;

/** The API's authentication: a key from MEDMMV_API_KEYS, or none when no keys are configured. */
export function apiKeyAuth(keys: ApiKeys): Authenticate {
  return async (request) => {
    if (!keys.enabled) return OPEN_OWNER;
    const header = request.headers.authorization;
    if (!header) throw new MedmmvError("UNAUTHORIZED", "missing API key: send the header `Authorization: Bearer <key>` with a key from MEDMMV_API_KEYS");
    const m = BEARER.exec(header);
    if (!m) throw new MedmmvError("UNAUTHORIZED", "malformed Authorization header: expected `Authorization: Bearer <key>`");
    const owner = keys.verify(m[1]!);
    if (!owner) throw new MedmmvError("UNAUTHORIZED", "invalid API key");
    return owner;
  };
}

/**
 * Which credential an owner authenticated with, by an id that is neither the key nor its
 * digest, and whether that credential is still configured. A view link names the key id
 * it was made with, so removing a key from MEDMMV_API_KEYS (or an issuer from
 * MEDMMV_CDS_ISSUERS) revokes the links it made.
 */
export class Credentials {
  readonly #issuerOwners: ReadonlySet<string>;

  constructor(
    private readonly keys: ApiKeys,
    issuers: readonly string[],
  ) {
    this.#issuerOwners = new Set(issuers.map(issuerOwner));
  }

  /** The key id of an authenticated owner: "open" without keys, else a short hash of the owner id. */
  keyId(owner: string): string {
    if (owner === OPEN_OWNER) return "open";
    return `k-${createHash("sha256").update(`medmmv:key-id:${owner}`).digest("hex").slice(0, 16)}`;
  }

  /** Whether a link minted by `owner` under `keyId` may still be used. */
  stillValid(keyId: string, owner: string): boolean {
    if (keyId !== this.keyId(owner)) return false;
    if (owner === OPEN_OWNER) return !this.keys.enabled;
    return this.keys.hasOwner(owner) || this.#issuerOwners.has(owner);
  }
}
