import type { FastifyRequest } from "fastify";
import { BEARER, OPEN_OWNER, openPrincipal, type ApiKeys, type Credentials } from "./auth.js";

/**
 * The caller of a page a browser opens (the audit view, the auditor pages): a signed link's
 * (`claims` of its token, null when it did not verify) acting for the key that made it while
 * that key is configured, named in the trail as the link `linkId`; else the key in the
 * Authorization header; else, with no keys configured, the local user. Any refusal is
 * `refused()`, whatever the reason, so the page tells a guesser nothing.
 */
export function linkOrKeyOwner(
  request: FastifyRequest,
  link: { token: string | undefined; claims: { owner: string; keyId: string } | null; linkId: (token: string) => string },
  o: { keys: ApiKeys; credentials: Credentials; refused: () => Error },
): string {
  if (link.token !== undefined) {
    const { claims } = link;
    if (!claims || !o.credentials.stillValid(claims.keyId, claims.owner)) throw o.refused();
    // The link acts for the key that made it (its tenant and roles), and the trail names the link.
    const principal = o.credentials.linkPrincipal(claims.owner, claims.keyId, link.linkId(link.token));
    if (!principal) throw o.refused();
    request.principal = principal;
    return claims.owner;
  }
  if (!o.keys.enabled) {
    request.principal = openPrincipal();
    return OPEN_OWNER;
  }
  const m = BEARER.exec(request.headers.authorization ?? "");
  const principal = m ? o.keys.principal(m[1]!) : null;
  if (!principal) throw o.refused();
  request.principal = principal;
  return principal.owner;
}
