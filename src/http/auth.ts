import { createHash, timingSafeEqual } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import { MedmmvError } from "../errors.js";

declare module "fastify" {
  interface FastifyRequest {
    /** sha256 of the caller's API key (the owner of the cases it creates); set by the auth hook. */
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
}

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;

/** onRequest hook: sets `request.owner`, or rejects with 401 and a message saying what to send. */
export function authHook(keys: ApiKeys) {
  return async (request: FastifyRequest, _reply: FastifyReply): Promise<void> => {
    if (!keys.enabled) {
      request.owner = OPEN_OWNER;
      return;
    }
    const header = request.headers.authorization;
    if (!header) {
      throw new MedmmvError("UNAUTHORIZED", "missing API key: send the header `Authorization: Bearer <key>` with a key from MEDMMV_API_KEYS");
    }
    const m = BEARER.exec(header);
    if (!m) throw new MedmmvError("UNAUTHORIZED", "malformed Authorization header: expected `Authorization: Bearer <key>`");
    const owner = keys.verify(m[1]!);
    if (!owner) throw new MedmmvError("UNAUTHORIZED", "invalid API key");
    request.owner = owner;
  };
}
