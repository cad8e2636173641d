import { randomBytes } from "node:crypto";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import { isMedmmvError, MedmmvError } from "../../../core/contracts/errors.js";
import { isTerminal } from "../../service/case-service.js";
import { buildViewPayload, renderCaseViewHtml, renderLiveViewHtml, renderViewMessageHtml, newViewNonce, viewContentSecurityPolicy } from "../../view/render-view.js";
import type { ViewLive, ViewRecord } from "../../view/view-payload.js";
import type { AccessTrail, CaseRecord } from "../../store/case-store.js";
import { feedbackText } from "../../cds-hooks/card-feedback.js";
import { actorText, trailRow } from "../../view/trail-words.js";
import { sendError, toHttpError } from "../errors.js";
import { eventRoutes, keyStreamPool, type StreamPoolOf } from "./events.js";
import { evidenceGraphRoutes } from "./evidence-graph.js";
import { fhirRoutes } from "./fhir.js";
import { caseViewInputFromStored } from "../../view/report-command.js";
import { signViewLink, verifyViewLink } from "../../view/signed-link.js";
import { requirePermission, viewLinkId, type Authenticate } from "../auth.js";
import { linkOrKeyOwner } from "../link-auth.js";
import { CaseIdParams, ErrorBody, errorResponses } from "../schemas.js";
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
export const viewLinkRoutes: FastifyPluginAsyncZod<RouteDeps & { secret: Buffer }> = async (app, { service, secret, credentials, access }) => {
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
      const ttl = request.body?.ttlSec ?? DEFAULT_LINK_TTL_SEC;
      const token = await access.audited(
        request,
        "view-link",
        id,
        async () => {
          await service.get(requirePermission(request, "read"), id); // 404 for cases out of reach
          return signViewLink({ caseId: id, owner: request.owner, keyId: credentials.keyId(request.owner) }, secret, ttl);
        },
        (t) => ({ linkId: viewLinkId(t), ttlSec: ttl }),
      );
      void reply.code(201);
      return { url: `/cases/${encodeURIComponent(id)}/view?token=${encodeURIComponent(token)}`, expiresAt: new Date(Date.now() + ttl * 1000).toISOString() };
    },
  );
};

/**
 * The one answer to a view request that fails for want of access, whatever the reason (no key
 * oracle), in the words of whoever clicked a link: a browser never sends a key.
 */
const VIEW_REFUSED = "This link to the audit view was not accepted: it has expired, or it is not a link to this case (a case that does not exist or is not yours looks the same). Links are made with POST /cases/{id}/view-links or come on the EHR's card.";

/**
 * GET /cases/{id}/view — the audit page. Opened either with the API key (header) or with a
 * signed link (`?token=`), so it has its own authentication instead of the key-only hooks;
 * both go through the request gate (failed attempts counted first, one budget per key). A
 * link works while the key it names is configured. A missing case, another key's case, a
 * bad key and a bad link all answer the same 401, so the page tells a guesser nothing.
 */
export const viewPageRoutes: FastifyPluginAsyncZod<RouteDeps & { secret: Buffer }> = async (app, deps) => {
  const { service, store, config, secret, gate, credentials, keys, access } = deps;
  const refused = () => new MedmmvError("UNAUTHORIZED", VIEW_REFUSED);
  /** Requests the gate let in by a signed link rather than the key (the route's query schema drops the token later). */
  const byLink = new WeakSet<FastifyRequest>();
  const authenticate = async (request: FastifyRequest<{ Params: { id?: string }; Querystring: { token?: string } }>): Promise<string> => {
    const token = request.query?.token;
    const claims = token === undefined ? null : verifyViewLink(token, secret);
    const owner = linkOrKeyOwner(request, { token, claims: claims?.caseId === request.params?.id ? claims : null, linkId: viewLinkId }, { keys, credentials, refused });
    if (token !== undefined) byLink.add(request);
    return owner;
  };
  app.addHook("onRequest", gate.hook(authenticate as Authenticate));
  /** The case for this caller, as an access to the trail; a missing one (or one out of reach) is the same refusal as a bad credential. */
  const caseForView = (request: FastifyRequest, id: string, part: "page" | "payload") =>
    access.audited(
      request,
      "view",
      id,
      () =>
        service.get(requirePermission(request, "read"), id).catch((err: unknown) => {
          throw isMedmmvError(err) && err.code === "NOT_FOUND" ? refused() : err;
        }),
      () => ({ part }),
    );

  // A browser opened this page: whatever goes wrong, it gets a page that says so, not JSON.
  // The stream and the payload are read by the page's script, which reads JSON errors.
  app.setErrorHandler((err, request, reply) => {
    if (request.routeOptions.url !== VIEW_PATH) return sendError(request, reply, err, config);
    const h = toHttpError(err, config);
    if (h.status >= 500) request.log.error({ code: h.code, statusCode: h.status }, "audit page failed");
    if (h.headers) void reply.headers(h.headers);
    return sendHtml(reply.status(h.status), messagePage(h.status, h.status >= 500 ? "The audit view could not be made; the server log names the request." : h.message));
  });

  /**
   * The token the page's script and downloads authenticate with: its own link's, or, for a
   * page opened with an API key, a link made for it, whose issuance is an access of its own
   * in the trail (it opens the case for LIVE_PAGE_TTL_SEC to whoever holds the page).
   */
  const pageToken = async (request: FastifyRequest, token: string | undefined, caseId: string, owner: string): Promise<string> => {
    if (token !== undefined) return token;
    const made = signViewLink({ caseId, owner, keyId: credentials.keyId(owner) }, secret, LIVE_PAGE_TTL_SEC);
    await access.record(request, "view-link", caseId, "success", { linkId: viewLinkId(made), ttlSec: LIVE_PAGE_TTL_SEC, via: "view-page" });
    return made;
  };

  app.get(
    VIEW_PATH,
    {
      schema: {
        tags: ["audit"],
        summary: "The audit view of a case (HTML): evidence graph, reasoning path, candidates, repairs; live progress while it runs",
        description:
          "A finished case: its audit view. A queued or running case: a page that shows its events as they happen and becomes the audit view when it finishes, without a reload. A failed case: a page saying why. Errors are HTML pages too.",
        params: CaseIdParams,
        querystring: z.object({ token: z.string().max(2000).optional().describe("Signed view link token") }),
        response: { 200: z.string().describe("HTML page"), ...errorResponses },
      },
    },
    async (request, reply) => {
      const record = await caseForView(request, request.params.id, "page");
      const nonce = newViewNonce();
      if (!isTerminal(record.status)) {
        const token = await pageToken(request, request.query.token, record.id, request.owner);
        const q = `?token=${encodeURIComponent(token)}`;
        const base = `/cases/${encodeURIComponent(record.id)}/view`;
        const live: ViewLive = { version: 1, caseId: record.id, status: record.status, eventsUrl: `${base}/events${q}`, payloadUrl: `${base}/payload${q}`, question: record.input.question };
        return sendHtml(reply, renderLiveViewHtml(live, nonce), viewContentSecurityPolicy(nonce, { live: true }));
      }
      if (!record.result) {
        const why = record.error ? `${record.error.code}: ${record.error.message}` : "it ended without a result";
        return sendHtml(reply, messagePage(200, `The analysis of case ${record.id} ${record.status === "failed" ? "failed" : `is ${record.status}`}: ${why}.`, nonce), viewContentSecurityPolicy(nonce, { script: false }));
      }
      // The graph in analysts' formats, under this page's authentication (a browser download sends no Authorization header).
      const pageQuery = `?token=${encodeURIComponent(await pageToken(request, request.query.token, record.id, request.owner))}`;
      const graphUrl = `/cases/${encodeURIComponent(record.id)}/view/evidence-graph${pageQuery}&scope=${record.fullEvidenceGraph ? "full" : "path"}`;
      const downloads = [
        { label: "GraphML", url: `${graphUrl}&format=graphml` },
        { label: "GEXF", url: `${graphUrl}&format=gexf` },
        { label: "graph JSON", url: `${graphUrl}&format=json` },
        { label: "result JSON", url: `/cases/${encodeURIComponent(record.id)}/view/payload${pageQuery}` },
        { label: "FHIR R4 Bundle", url: `/cases/${encodeURIComponent(record.id)}/view/fhir${pageQuery}` },
      ];
      return sendHtml(reply, renderCaseViewHtml({ ...(await viewInput(record, request)), mode: "served", nonce, downloads }), viewContentSecurityPolicy(nonce));
    },
  );

  app.get(
    `${VIEW_PATH}/payload`,
    {
      schema: {
        tags: ["audit"],
        summary: "The data of a finished case's audit view (what the live page draws once the case finishes)",
        params: CaseIdParams,
        querystring: z.object({ token: z.string().max(2000).optional().describe("Signed view link token") }),
        response: { 200: z.looseObject({ version: z.literal(1) }).describe("ViewPayload"), ...errorResponses, 409: ErrorBody },
      },
    },
    async (request, reply) => {
      const record = await caseForView(request, request.params.id, "payload");
      if (!isTerminal(record.status) || !record.result)
        throw new MedmmvError("CONFLICT", `case ${record.id} is ${record.status}; its audit view exists once it has finished with a result`, { details: { status: record.status } });
      void reply.header("cache-control", "no-store");
      // Sent as built: the response schema only documents it (it would strip what it does not list).
      const payload = buildViewPayload({ ...(await viewInput(record, request)), mode: "served" });
      return reply.serializer((p: unknown) => JSON.stringify(p)).send(payload as unknown as { version: 1 });
    },
  );

  // The case's events for the live page, under this page's authentication (EventSource sends no Authorization header).
  // Streams opened with a link count against the key's links' own cap, so whoever holds a link
  // (an EHR user, for up to a day) cannot use up the streams of the key itself. The page always
  // streams through a link (it signs one even when opened with the key), so its stream is in that pool.
  const viewStreamPool: StreamPoolOf = (request) => {
    if (!byLink.has(request)) return keyStreamPool(request, config);
    const max = config.http.maxViewLinkStreamsPerKey;
    return { key: `view-link:${request.owner}`, max, refusal: `too many open event streams through this key's view links: at most ${max} (MEDMMV_MAX_VIEW_LINK_STREAMS_PER_KEY)` };
  };
  await app.register(eventRoutes, { ...deps, path: `${VIEW_PATH}/events`, pool: viewStreamPool });
  // The page's downloads of the evidence graph (GraphML, GEXF), likewise.
  await app.register(evidenceGraphRoutes, { ...deps, path: `${VIEW_PATH}/evidence-graph` });
  // And the case as a FHIR R4 Bundle.
  await app.register(fhirRoutes, { ...deps, path: `${VIEW_PATH}/fhir` });

  async function viewInput(record: CaseRecord, request: FastifyRequest) {
    // Who saw the case is for auditors and admins (the trail's readers), not every reader of the case.
    const roles = request.principal?.roles;
    const trail = roles?.has("auditor") || roles?.has("admin") ? (await store.listAccess({ tenant: record.tenant, caseId: record.id, limit: VIEW_TRAIL_ROWS })).items.map(trailRow) : undefined;
    const images = await Promise.all(record.input.images.map((i) => store.getImage(i.sha256)));
    return {
      result: record.result!,
      fullEvidenceGraph: record.fullEvidenceGraph,
      caseInput: caseViewInputFromStored(record.input, images),
      turns: await store.listTurns(record.id),
      record: { submittedBy: record.submittedBy, createdAt: record.createdAt, feedback: await cardFeedback(store, record), ...(trail ? { trail } : {}) },
    };
  }
};

const VIEW_PATH = "/cases/:id/view";
/** The first accesses of a case its audit view lists for an auditor (the auditor page has them all). */
const VIEW_TRAIL_ROWS = 100;

/** The CDS card feedback on a case, from its access trail (where the feedback route writes it), oldest first. */
export async function cardFeedback(store: AccessTrail, record: Pick<CaseRecord, "id" | "tenant">): Promise<ViewRecord["feedback"]> {
  const page = await store.listAccess({ tenant: record.tenant, caseId: record.id, action: "feedback", limit: 100 });
  return page.items.filter((e) => e.outcome === "success").map((e) => ({ at: e.at, text: feedbackText(e.detail), by: actorText(e.actor) }));
}
/** How long the token lasts that a page opened with an API key mints for its own script. */
const LIVE_PAGE_TTL_SEC = 6 * 60 * 60;

const STATUS_TITLES: Record<number, string> = { 200: "Case not analysed", 401: "Link not accepted", 404: "Case not found", 429: "Too many requests" };

function messagePage(status: number, message: string, nonce = newViewNonce()): { html: string; nonce: string } {
  const hint = status === 401 ? "Open the link again from the EHR or ask for a new one; view links expire." : status === 404 ? "The case may have been deleted, or the link is for another account." : undefined;
  return { html: renderViewMessageHtml({ title: STATUS_TITLES[status] ?? (status >= 500 ? "Server error" : "Request refused"), message, hint, nonce }), nonce };
}

/** An HTML page with its CSP as a header too (plus `frame-ancestors 'none'`, which a <meta> policy cannot carry). */
export function sendHtml(reply: FastifyReply, page: string | { html: string; nonce: string }, csp?: string): FastifyReply {
  const { html, policy } = typeof page === "string" ? { html: page, policy: csp! } : { html: page.html, policy: csp ?? viewContentSecurityPolicy(page.nonce, { script: false }) };
  return reply
    .header("content-security-policy", `${policy}; frame-ancestors 'none'`)
    .header("referrer-policy", "no-referrer")
    .header("cache-control", "no-store")
    .type("text/html; charset=utf-8")
    .send(html);
}
