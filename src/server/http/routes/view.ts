import { randomBytes } from "node:crypto";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { FastifyRequest } from "fastify";
import { z } from "zod";
import { MedmmvError } from "../../../core/contracts/errors.js";
import { isTerminal } from "../../service/case-service.js";
import { renderCaseViewHtml, newViewNonce, viewContentSecurityPolicy } from "../../view/render-view.js";
import { caseViewInputFromStored } from "../../view/report-command.js";
import { signViewLink, verifyViewLink } from "../../view/signed-link.js";
import { ApiKeys, OPEN_OWNER } from "../auth.js";
import { registerRateLimit } from "../plugins/rate-limit.js";
import { CaseIdParams, errorResponses } from "../schemas.js";
import type { RouteDeps } from "./route-deps.js";

const DEFAULT_LINK_TTL_SEC = 15 * 60;
export const MAX_LINK_TTL_SEC = 24 * 60 * 60;

/**
 * The secret that signs view links. Without MEDMMV_VIEW_LINK_SECRET a random one is made
 * per process: links still work, but only until the server restarts.
 */
export function viewLinkSecret(configured: string | null): Buffer {
  return configured ? Buffer.from(configured, "utf8") : randomBytes(32);
}

/** POST /cases/{id}/view-links — behind the API key, like every case route. */
export const viewLinkRoutes: FastifyPluginAsyncZod<RouteDeps & { secret: Buffer }> = async (app, { service, secret }) => {
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
      const token = signViewLink(id, request.owner, secret, ttl);
      void reply.code(201);
      return { url: `/cases/${encodeURIComponent(id)}/view?token=${encodeURIComponent(token)}`, expiresAt: new Date(Date.now() + ttl * 1000).toISOString() };
    },
  );
};

/**
 * GET /cases/{id}/view — the audit page. Opened either with the API key (header) or with a
 * signed link (`?token=`), so it has its own authentication instead of the key-only hooks.
 */
export const viewPageRoutes: FastifyPluginAsyncZod<RouteDeps & { secret: Buffer }> = async (app, { service, store, config, secret }) => {
  const keys = new ApiKeys(config.http.apiKeys);
  app.decorateRequest("owner", "");
  app.addHook("onRequest", async (request: FastifyRequest<{ Params: { id?: string }; Querystring: { token?: string } }>) => {
    const token = request.query?.token;
    if (token !== undefined) {
      const claims = verifyViewLink(token, secret);
      if (!claims || claims.caseId !== request.params?.id) throw new MedmmvError("UNAUTHORIZED", "view link is invalid or expired: ask for a new one with POST /cases/{id}/view-links");
      request.owner = claims.owner;
      return;
    }
    if (!keys.enabled) {
      request.owner = OPEN_OWNER;
      return;
    }
    const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(request.headers.authorization ?? "");
    const owner = m ? keys.verify(m[1]!) : null;
    if (!owner) throw new MedmmvError("UNAUTHORIZED", "send `Authorization: Bearer <key>` or open a signed link from POST /cases/{id}/view-links");
    request.owner = owner;
  });
  await registerRateLimit(app, config.http.rateLimitPerMin);

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
      const record = await service.get(request.owner, request.params.id);
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
