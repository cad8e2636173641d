import { readFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { createLocalJWKSet, createRemoteJWKSet, decodeJwt, jwtVerify, type JSONWebKeySet, type JWTVerifyGetKey } from "jose";
import { MedmmvError } from "../../core/contracts/errors.js";
import type { TokenLedger } from "../store/case-store.js";

export interface CdsJwtOptions {
  /**
   * Each accepted issuer with its own JWKS (an https URL or a local JWKS file):
   * MEDMMV_CDS_ISSUERS_FILE, or MEDMMV_CDS_ISSUERS with MEDMMV_CDS_JWKS (one issuer).
   */
  issuerKeys: ReadonlyArray<{ iss: string; jwks: string }>;
  /**
   * Where used `jti`s are recorded: the case store, so a token replayed to another worker
   * or replica on the same store is refused too (a per-process memory would accept it).
   */
  usedTokenIds: TokenLedger;
}

/**
 * The clock skew allowed between the EHR and this service, in seconds: on `exp` (jose's
 * clockTolerance), on `iat` (not later than now plus this) and on the lifetime horizon.
 * A jti is kept this long past its token's exp.
 */
export const CLOCK_SKEW_SEC = 30;
/**
 * The furthest ahead an `exp` may be. CDS Hooks signs one short-lived token per call; a
 * token that lives for years is a stolen key's dream, and it would keep its jti in the
 * ledger as long. Five minutes covers any honest EHR.
 */
export const MAX_TOKEN_LIFETIME_SEC = 5 * 60;
/** CDS Hooks 2.0.1: "JWTs SHALL NOT be signed using any symmetric algorithm" (nor `none`): public-key signatures only. */
const ASYMMETRIC_ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA", "Ed25519"];

function keySet(jwks: string): JWTVerifyGetKey {
  if (/^https?:\/\//i.test(jwks)) return createRemoteJWKSet(new URL(jwks), { timeoutDuration: 5_000 });
  let parsed: JSONWebKeySet;
  try {
    parsed = JSON.parse(readFileSync(jwks, "utf8")) as JSONWebKeySet;
  } catch (err) {
    throw new MedmmvError("CONFIG_INVALID", `MEDMMV_CDS_JWKS: cannot read a JWKS from ${jwks}`, { cause: err });
  }
  return createLocalJWKSet(parsed);
}

/** A JWT looks like three base64url parts; an API key does not. */
export function looksLikeJwt(token: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(token);
}

/**
 * CDS Hooks 2.0 authorization: the EHR signs a short JWT per call with a key of its JWKS.
 * Only the configured JWKS is used (a token's own `jku` is never followed); `iss` must be
 * a listed issuer, `aud` this endpoint (from MEDMMV_PUBLIC_URL, never from the request),
 * `exp` in the future but at most MAX_TOKEN_LIFETIME_SEC ahead, `iat` not in the future,
 * `jti` a non-empty string accepted once across every process on the store (remembered
 * until the token would have expired anyway), each check with CLOCK_SKEW_SEC of skew.
 */
/** The owner of the cases an EHR creates: a hash of its issuer (also how a view link it was given is revoked with the issuer). */
export const issuerOwner = (iss: string): string => `cds-${createHash("sha256").update(iss).digest("hex")}`;

export class CdsJwtVerifier {
  /** Each issuer's own key set: a token is checked against its `iss`'s keys only, so one EHR's key cannot sign as another. */
  readonly #keys: ReadonlyMap<string, JWTVerifyGetKey>;

  constructor(private readonly opts: CdsJwtOptions) {
    this.#keys = new Map(opts.issuerKeys.map((i) => [i.iss, keySet(i.jwks)]));
  }

  /**
   * The owner id for cases this EHR creates: a hash of its issuer.
   * `audience`: the URL of the service endpoint being called (CDS Hooks `aud`).
   */
  async verify(token: string, audience: string, nowMs = Date.now()): Promise<{ owner: string; iss: string; sub: string | null }> {
    let payload;
    try {
      // The claimed issuer picks the key set; the signature check below is what proves it.
      const claimed = decodeJwt(token).iss;
      const keys = typeof claimed === "string" ? this.#keys.get(claimed) : undefined;
      if (!keys) throw Object.assign(new Error("unknown issuer"), { code: "ERR_JWT_CLAIM_VALIDATION_FAILED" });
      ({ payload } = await jwtVerify(token, keys, {
        issuer: claimed,
        audience,
        requiredClaims: ["iss", "aud", "exp", "iat", "jti"],
        algorithms: ASYMMETRIC_ALGORITHMS,
        currentDate: new Date(nowMs),
        clockTolerance: CLOCK_SKEW_SEC,
      }));
    } catch (err) {
      const why = (err as { code?: string }).code ?? "ERR_JWT_INVALID";
      throw new MedmmvError("UNAUTHORIZED", `the CDS Hooks JWT was refused (${why}): it must be signed by a key of its issuer's own JWKS, with iss a configured issuer, aud ${audience}, a future exp and a fresh jti`, { cause: err });
    }
    const nowSec = nowMs / 1000;
    if (payload.exp! > nowSec + MAX_TOKEN_LIFETIME_SEC + CLOCK_SKEW_SEC)
      throw new MedmmvError("UNAUTHORIZED", `the CDS Hooks JWT was refused: its exp is more than ${MAX_TOKEN_LIFETIME_SEC} s ahead; sign a short-lived token for each call`);
    if (payload.iat! > nowSec + CLOCK_SKEW_SEC) throw new MedmmvError("UNAUTHORIZED", "the CDS Hooks JWT was refused: its iat is in the future; check the EHR's clock");
    if (typeof payload.jti !== "string" || !payload.jti.trim()) throw new MedmmvError("UNAUTHORIZED", "the CDS Hooks JWT was refused: its jti is empty; give each token a unique jti");
    const expiresAtMs = (payload.exp! + CLOCK_SKEW_SEC) * 1000;
    if (!(await this.opts.usedTokenIds.useTokenId(payload.iss!, payload.jti!, expiresAtMs, nowMs))) {
      throw new MedmmvError("UNAUTHORIZED", "the CDS Hooks JWT was already used (jti replay); sign a new token for each call");
    }
    return { owner: issuerOwner(payload.iss!), iss: payload.iss!, sub: typeof payload.sub === "string" ? payload.sub : null };
  }
}
