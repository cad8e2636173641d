import { createHash, timingSafeEqual } from "node:crypto";
import type { FastifyRequest } from "fastify";
import type { ApiKeyEntry, Role } from "../../core/access-files.js";
import { MedmmvError } from "../../core/contracts/errors.js";
import { issuerOwner } from "../cds-hooks/jwt-auth.js";
import type { CaseScope } from "../service/case-service.js";
import type { AccessActor } from "../store/case-store.js";

/**
 * Who an authenticated request acts as. `owner` is the identity a case it submits is
 * stored under (the key's digest, an EHR issuer's hash, or "local") and the rate-limit
 * bucket; `tenant` is its team; `keyId` the name the trail and search show; `actor` who
 * the trail says acted (the key, the EHR user, or the view link).
 */
export interface Principal {
  owner: string;
  tenant: string;
  keyId: string;
  roles: ReadonlySet<Role>;
  actor: AccessActor;
}

declare module "fastify" {
  interface FastifyRequest {
    /** sha256 of the caller's API key (the owner of the cases it creates); "" until authenticated. */
    owner: string;
    /** The authenticated caller; null until authenticated (set by the route's authentication). */
    principal: Principal | null;
  }
}

/** Owner used for every case when no API keys are configured (local, loopback-only use). */
export const OPEN_OWNER = "local";
/** With no keys configured (loopback only) the one local user may do everything. */
const OPEN_ROLES: ReadonlySet<Role> = new Set(["clinician", "admin"]);
const CLINICIAN: ReadonlySet<Role> = new Set(["clinician"]);

/** The digest keys and tokens are kept and compared as (never the secret itself). */
export function sha256(text: string): Buffer {
  return createHash("sha256").update(text, "utf8").digest();
}

/** The key id of a MEDMMV_API_KEYS key, or of an EHR issuer's owner: a short hash of the owner id, neither the key nor its digest. */
export function derivedKeyId(owner: string): string {
  return `k-${createHash("sha256").update(`medmmv:key-id:${owner}`).digest("hex").slice(0, 16)}`;
}

interface KnownKey {
  digest: Buffer;
  id: string;
  tenant: string;
  roles: ReadonlySet<Role>;
}

/**
 * The API keys: MEDMMV_API_KEYS (each key its own tenant, a clinician) and
 * MEDMMV_API_KEYS_FILE (digests with an id, a tenant and roles). Only digests are kept; a
 * presented key is hashed and compared with every digest in constant time (equal-length
 * buffers, no early exit), so neither the key's content nor its length leaks through timing.
 */
export class ApiKeys {
  readonly #keys: KnownKey[];

  constructor(keys: readonly string[], file: readonly ApiKeyEntry[] = []) {
    const fromFile = file.map((e) => ({ digest: Buffer.from(e.sha256, "hex"), id: e.id, tenant: e.tenant, roles: new Set(e.roles) }));
    const listed = new Set(fromFile.map((k) => k.digest.toString("hex")));
    // A key in both places takes its team and roles from the file.
    const plain = keys.map(sha256).filter((d) => !listed.has(d.toString("hex")));
    this.#keys = [...fromFile, ...plain.map((digest) => ({ digest, id: derivedKeyId(digest.toString("hex")), tenant: digest.toString("hex"), roles: CLINICIAN }))];
  }

  get enabled(): boolean {
    return this.#keys.length > 0;
  }

  /** The owner id (hex sha256 of the key) if the key is valid, else null. */
  verify(presented: string): string | null {
    return this.#find(presented)?.digest.toString("hex") ?? null;
  }

  /** The caller a valid key acts as, else null. */
  principal(presented: string): Principal | null {
    const k = this.#find(presented);
    return k ? keyPrincipal(k) : null;
  }

  /** The caller an owner id (a key's digest) acts as, while that key is configured. */
  principalOfOwner(owner: string): Principal | null {
    const k = this.#keys.find((x) => x.digest.toString("hex") === owner);
    return k ? keyPrincipal(k) : null;
  }

  /** Whether `owner` is the owner id of a key configured now (owner ids are digests, not secrets). */
  hasOwner(owner: string): boolean {
    return this.#keys.some((d) => d.digest.toString("hex") === owner);
  }

  /** The keys of the file, for adopting the cases they stored before they had a team. */
  teamKeys(): Array<{ owner: string; tenant: string; id: string }> {
    return this.#keys.filter((k) => k.tenant !== k.digest.toString("hex")).map((k) => ({ owner: k.digest.toString("hex"), tenant: k.tenant, id: k.id }));
  }

  #find(presented: string): KnownKey | null {
    const d = sha256(presented);
    let match: KnownKey | null = null;
    for (const known of this.#keys) if (timingSafeEqual(d, known.digest)) match = known;
    return match;
  }
}

function keyPrincipal(k: KnownKey): Principal {
  return { owner: k.digest.toString("hex"), tenant: k.tenant, keyId: k.id, roles: k.roles, actor: { type: "key", id: k.id } };
}

export function openPrincipal(): Principal {
  return { owner: OPEN_OWNER, tenant: OPEN_OWNER, keyId: "open", roles: OPEN_ROLES, actor: { type: "key", id: "open" } };
}

/** An EHR's caller: a clinician of the tenant its issuer is mapped to (or its own), named by issuer and `sub`. */
export function ehrPrincipal(iss: string, sub: string | null, tenant: string | null): Principal {
  const owner = issuerOwner(iss);
  return { owner, tenant: tenant ?? owner, keyId: iss, roles: CLINICIAN, actor: { type: "ehr", id: iss, sub } };
}

/** The credential of an `Authorization: Bearer <credential>` header (an API key, or a CDS Hooks JWT). */
export const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;

/** Answers the owner of an authenticated request (and sets request.principal), or throws an UNAUTHORIZED MedmmvError saying what to send. */
export type Authenticate = (request: FastifyRequest) => Promise<string>;

/** The API's authentication: a key from MEDMMV_API_KEYS or MEDMMV_API_KEYS_FILE, or none when no keys are configured. */
export function apiKeyAuth(keys: ApiKeys): Authenticate {
  return async (request) => {
    if (!keys.enabled) {
      request.principal = openPrincipal();
      return OPEN_OWNER;
    }
    const header = request.headers.authorization;
    if (!header) throw new MedmmvError("UNAUTHORIZED", "missing API key: send the header `Authorization: Bearer <key>` with a key from MEDMMV_API_KEYS or MEDMMV_API_KEYS_FILE");
    const m = BEARER.exec(header);
    if (!m) throw new MedmmvError("UNAUTHORIZED", "malformed Authorization header: expected `Authorization: Bearer <key>`");
    const principal = keys.principal(m[1]!);
    if (!principal) throw new MedmmvError("UNAUTHORIZED", "invalid API key");
    request.principal = principal;
    return principal.owner;
  };
}

/** What a route may do for the caller, by its roles. */
export type Permission = "submit" | "read" | "delete" | "audit";

const PERMITTED: Record<Permission, Role[]> = {
  submit: ["clinician"],
  read: ["clinician", "auditor", "admin"],
  delete: ["clinician", "admin"],
  audit: ["auditor", "admin"],
};

/**
 * The cases the caller may reach for `permission`, or a 403 naming the roles that may.
 * Reads reach the whole tenant for auditors and admins, deletes for admins; a clinician
 * reaches its own cases.
 */
export function requirePermission(request: FastifyRequest, permission: Permission): CaseScope {
  const p = request.principal;
  if (!p) throw new MedmmvError("UNAUTHORIZED", "not authenticated");
  const allowed = PERMITTED[permission];
  if (!allowed.some((r) => p.roles.has(r))) {
    const needed = allowed.length === 1 ? `the role ${allowed[0]}` : `one of the roles ${allowed.join(", ")}`;
    throw new MedmmvError("FORBIDDEN", `this needs ${needed}; this caller has ${[...p.roles].join(", ")}`, { details: { needs: allowed, has: [...p.roles] } });
  }
  const wholeTenant = permission === "delete" ? p.roles.has("admin") : permission === "read" || permission === "audit" ? p.roles.has("auditor") || p.roles.has("admin") : false;
  return { owner: p.owner, tenant: p.tenant, wholeTenant };
}

/**
 * Which credential an owner authenticated with, by an id that is neither the key nor its
 * digest, and whether that credential is still configured. A view link names the key id
 * it was made with, so removing a key (or an issuer) revokes the links it made.
 */
export class Credentials {
  readonly #issuers: ReadonlyMap<string, { iss: string; tenant: string | null }>;

  constructor(
    private readonly keys: ApiKeys,
    issuers: ReadonlyArray<{ iss: string; tenant: string | null }>,
  ) {
    this.#issuers = new Map(issuers.map((i) => [issuerOwner(i.iss), i]));
  }

  /** The key id of an authenticated owner: "open" without keys, a file key's id, else a short hash of the owner id. */
  keyId(owner: string): string {
    if (owner === OPEN_OWNER) return "open";
    return this.keys.principalOfOwner(owner)?.keyId ?? derivedKeyId(owner);
  }

  /** Whether a link minted by `owner` under `keyId` may still be used. */
  stillValid(keyId: string, owner: string): boolean {
    if (keyId !== this.keyId(owner)) return false;
    if (owner === OPEN_OWNER) return !this.keys.enabled;
    return this.keys.hasOwner(owner) || this.#issuers.has(owner);
  }

  /** Who a view link made by `owner` acts for (its tenant and roles), named in the trail as the link `linkId`. */
  linkPrincipal(owner: string, keyId: string, linkId: string): Principal | null {
    const minter = owner === OPEN_OWNER ? openPrincipal() : (this.keys.principalOfOwner(owner) ?? this.#ehrOwner(owner));
    return minter ? { ...minter, actor: { type: "link", id: linkId, sub: keyId } } : null;
  }

  #ehrOwner(owner: string): Principal | null {
    const i = this.#issuers.get(owner);
    return i ? ehrPrincipal(i.iss, null, i.tenant) : null;
  }
}

/** A view link's id for the trail: a short hash of its token (the token itself is a credential). */
export function viewLinkId(token: string): string {
  return `l-${createHash("sha256").update(`medmmv:view-link:${token}`).digest("hex").slice(0, 16)}`;
}
