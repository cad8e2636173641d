import { randomBytes } from "node:crypto";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { FastifyRequest } from "fastify";
import { z } from "zod";
import { isMedmmvError, MedmmvError } from "../../../core/contracts/errors.js";
import { isTerminal } from "../../service/case-service.js";
import { renderCaseViewHtml, newViewNonce, viewContentSecurityPolicy } from "../../view/render-view.js";
import { caseViewInputFromStored } from "../../view/report-command.js";
import { signViewLink, verifyViewLink } from "../../view/signed-link.js";
import { ApiKeys, BEARER, OPEN_OWNER, type Authenticate } from "../auth.js";
import { CaseIdParams, errorResponses } from "../schemas.js";
import type { RouteDeps } from "./route-deps.js";

const DEFAULT_LINK_TTL_SEC = 15 * 60;
export const MAX_LINK_TTL_SEC = 24 * 60 * 60;

/**
 * The secret that signs view links. Without MEDMMV_VIEW_LINK_SECRET a random one is made
 * per process: links still work, but only until the server restarts (`serve --workers N`
 * hands its workers one shared secret, server-workers.ts). A short configured secret never
 * gets here: the configuration refuses it at start.
 */
export function viewLinkSecret(configured: string | null): Buffer {
  return configured ? Buffer.from(configured, "utf8") : randomBytes(32);
}

/** POST /cases/{id}/view-links — behind the API key, like every case route. */
export const viewLinkRoutes: FastifyPluginAsyncZod<RouteDeps & { secret: Buffer }> = async (app, { service, secret, credentials }) => {
  app.post(
    "/cases/:id/view-links",
    {
      schema: {
        tags: ["audit"],
        summary: "A short-lived signed link to the audit view of a case (no API key needed to open it)",
        params: CaseIdParams,
        body: z.object({ ttlSec: z.number().int().min(30).max(MAX_LINK_TTL_SEC).default(DEFAULT_LINK_TTL_SEC).describe("Lifetime of the link in seconds") }).default({ ttlSec: DEFAULT_LINK_TTL_SEC }),
        response: { 201: z.object({ url: z.string(), expiresAt: z.string() }).describe("ViewLink"), ...errorResponses },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      await service.get(request.owner, id); // 404 for other keys' cases
      const ttl = request.body?.ttlSec ?? DEFAULT_LINK_TTL_SEC;
      const token = signViewLink({ caseId: id, owner: request.owner, keyId: credentials.keyId(request.owner) }, secret, ttl);
      void reply.code(201);
      return { url: `/cases/${encodeURIComponent(id)}/view?token=${encodeURIComponent(token)}`, expiresAt: new Date(Date.now() + ttl * 1000).toISOString() };
    },
  );
};

/** The one answer to a view request that fails for want of access, whatever the reason (no key oracle). */
const VIEW_REFUSED = "send `Authorization: Bearer <key>` for a case of that key, or open a valid signed link from POST /cases/{id}/view-links";

/**
 * GET /cases/{id}/view — the audit page. Opened either with the API key (header) or with a
 * signed link (`?token=`), so it has its own authentication instead of the key-only hooks;
 * both go through the request gate (failed attempts counted first, one budget per key). A
 * link works while the key it names is configured. A missing case, another key's case, a
 * bad key and a bad link all answer the same 401, so the page tells a guesser nothing.
 */
export const viewPageRoutes: FastifyPluginAsyncZod<RouteDeps & { secret: Buffer }> = async (app, { service, store, config, secret, gate, credentials }) => {
  const keys = new ApiKeys(config.http.apiKeys);
  const refused = () => new MedmmvError("UNAUTHORIZED", VIEW_REFUSED);
  const authenticate = async (request: FastifyRequest<{ Params: { id?: string }; Querystring: { token?: string } }>): Promise<string> => {
    const token = request.query?.token;
    if (token !== undefined) {
      const claims = verifyViewLink(token, secret);
      if (!claims || claims.caseId !== request.params?.id || !credentials.stillValid(claims.keyId, claims.owner)) throw refused();
      return claims.owner;
    }
    if (!keys.enabled) return OPEN_OWNER;
    const m = BEARER.exec(request.headers.authorization ?? "");
    const owner = m ? keys.verify(m[1]!) : null;
    if (!owner) throw refused();
    return owner;
  };
  app.addHook("onRequest", gate.hook(authenticate as Authenticate));

  app.get(
    "/cases/:id/view",
    {
      schema: {
        tags: ["audit"],
        summary: "The audit view of a finished case (HTML): evidence graph, reasoning path, candidates, repairs",
        params: CaseIdParams,
        querystring: z.object({ token: z.string().max(2000).optional().describe("Signed view link token") }),
        response: { 200: z.string().describe("HTML page"), ...errorResponses },
      },
    },
    async (request, reply) => {
      const record = await service.get(request.owner, request.params.id).catch((err: unknown) => {
        throw isMedmmvError(err) && err.code === "NOT_FOUND" ? refused() : err;
      });
      if (!isTerminal(record.status) || !record.result)
        throw new MedmmvError("CONFLICT", `case ${record.id} is ${record.status}; its audit view is available once it finishes`, { details: { status: record.status } });
      const images = await Promise.all(record.input.images.map((i) => store.getImage(i.sha256)));
      const nonce = newViewNonce();
      const html = renderCaseViewHtml({
        result: record.result,
        fullEvidenceGraph: record.fullEvidenceGraph,
        caseInput: caseViewInputFromStored(record.input, images),
        mode: "served",
        nonce,
        turns: await store.listTurns(record.id),
      });
      // Helmet's default CSP would block the page's own inline script; this one allows exactly it.
      void reply
        .header("content-security-policy", `${viewContentSecurityPolicy(nonce)}; frame-ancestors 'none'`)
        .header("referrer-policy", "no-referrer")
        .header("cache-control", "no-store")
        .type("text/html; charset=utf-8");
      return html;
    },
  );
};
