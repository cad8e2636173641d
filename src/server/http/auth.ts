import { createHash, timingSafeEqual } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import { isMedmmvError, MedmmvError } from "../../core/contracts/errors.js";

declare module "fastify" {
  interface FastifyRequest {
    /** sha256 of the caller's API key (the owner of the cases it creates); "" until authenticated. */
    owner: string;
  }
}

/** Why a request was not authenticated, kept until the rate limit has counted it. */
const rejected = new WeakMap<FastifyRequest, MedmmvError>();

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
}

/** The credential of an `Authorization: Bearer <credential>` header (an API key, or a CDS Hooks JWT). */
export const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;

/**
 * Two hooks around the rate limit: `identify` (onRequest) runs `authenticate`, which
 * answers the owner or throws why not, and sets `request.owner` or notes the refusal; the
 * per-route rate limit then counts the request (by owner, or by address when
 * unauthenticated, so guessing credentials is throttled too); `enforce` (preParsing, before
 * any body is read) throws the refusal, a 401 with a message saying what to send.
 */
export function deferredAuth(authenticate: (request: FastifyRequest) => Promise<string>) {
  const identify = async (request: FastifyRequest, _reply: FastifyReply): Promise<void> => {
    try {
      request.owner = await authenticate(request);
    } catch (err) {
      if (!isMedmmvError(err)) throw err;
      rejected.set(request, err);
    }
  };
  const enforce = async (request: FastifyRequest): Promise<void> => {
    const problem = rejected.get(request);
    if (problem) throw problem;
  };
  return { identify, enforce };
}

/** `deferredAuth` for the API: a key from MEDMMV_API_KEYS, or none when no keys are configured. */
export function authHooks(keys: ApiKeys) {
  return deferredAuth(async (request) => {
    if (!keys.enabled) return OPEN_OWNER;
    const header = request.headers.authorization;
    if (!header) throw new MedmmvError("UNAUTHORIZED", "missing API key: send the header `Authorization: Bearer <key>` with a key from MEDMMV_API_KEYS");
    const m = BEARER.exec(header);
    if (!m) throw new MedmmvError("UNAUTHORIZED", "malformed Authorization header: expected `Authorization: Bearer <key>`");
    const owner = keys.verify(m[1]!);
    if (!owner) throw new MedmmvError("UNAUTHORIZED", "invalid API key");
    return owner;
  });
}
