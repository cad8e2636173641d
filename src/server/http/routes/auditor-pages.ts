import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { FastifyRequest } from "fastify";
import { createHash } from "node:crypto";
import { z } from "zod";
import { describeZodIssues } from "../../../core/contracts/zod-issues.js";
import { isMedmmvError, MedmmvError } from "../../../core/contracts/errors.js";
import type { AccessEvent, AccessQuery, ListCasesQuery } from "../../store/case-store.js";
import { renderAuditorCasesPage, renderAuditorTrailPage, pageHref, type FormField } from "../../view/render-auditor-pages.js";
import { newViewNonce, renderViewMessageHtml, viewContentSecurityPolicy, escapeHtml } from "../../view/render-view.js";
import { signAuditorLink, signViewLink, verifyAuditorLink } from "../../view/signed-link.js";
import { trailCsv, trailRow } from "../../view/trail-words.js";
import { toAuditEvent } from "../audit-event-fhir.js";
import { requirePermission, type Authenticate } from "../auth.js";
import { linkOrKeyOwner } from "../link-auth.js";
import { toHttpError } from "../errors.js";
import { errorResponses } from "../schemas.js";
import { refuseUnknownFilters, SearchQuery, searchFilters } from "./cases.js";
import type { RouteDeps } from "./route-deps.js";
import { cardFeedback, MAX_LINK_TTL_SEC, sendHtml } from "./view.js";

const DEFAULT_AUDITOR_LINK_TTL_SEC = 8 * 60 * 60;
/** The most events one export writes (a day of a busy team is far below it); more asks for a shorter period. */
const MAX_EXPORT_EVENTS = 50_000;
const TRAIL_PAGE = 200;
/** The view link a case's trail page offers its auditor lasts as long as an auditor link may. */
const VIEW_LINK_FROM_AUDIT_SEC = 60 * 60;

/** An auditor link's id for the trail: a short hash of its token (the token itself is a credential). */
export function auditorLinkId(token: string): string {
  return `a-${createHash("sha256").update(`medmmv:auditor-link:${token}`).digest("hex").slice(0, 16)}`;
}

/** POST /audit-links — behind the API key: a link an auditor opens in a browser (no key in it, and none needed). */
export const auditorLinkRoutes: FastifyPluginAsyncZod<RouteDeps & { secret: Buffer }> = async (app, { secret, credentials, access }) => {
  app.post(
    "/audit-links",
    {
      schema: {
        tags: ["audit"],
        summary: "A short-lived signed link to the auditor pages (the team's cases, a case's trail, the team's trail and its exports) for a browser (auditor, admin)",
        body: z.object({ ttlSec: z.number().int().min(60).max(MAX_LINK_TTL_SEC).default(DEFAULT_AUDITOR_LINK_TTL_SEC).describe("Lifetime of the link in seconds") }).default({ ttlSec: DEFAULT_AUDITOR_LINK_TTL_SEC }),
        response: { 201: z.object({ url: z.string(), expiresAt: z.string() }).describe("AuditorLink"), ...errorResponses },
      },
    },
    async (request, reply) => {
      const ttl = request.body?.ttlSec ?? DEFAULT_AUDITOR_LINK_TTL_SEC;
      const token = await access.audited(
        request,
        "audit-link",
        null,
        async () => {
          requirePermission(request, "audit");
          return signAuditorLink({ owner: request.owner, keyId: credentials.keyId(request.owner) }, secret, ttl);
        },
        (t) => ({ linkId: auditorLinkId(t), ttlSec: ttl }),
      );
      void reply.code(201);
      return { url: `/audit?token=${encodeURIComponent(token)}`, expiresAt: new Date(Date.now() + ttl * 1000).toISOString() };
    },
  );
};

const REFUSED = "open the auditor pages with a link from POST /audit-links (made with an auditor's or an admin's key); links expire";

const PageQuery = z.looseObject({ token: z.string().max(2000).optional().describe("Auditor link token (POST /audit-links)") });
const day = z.iso.date();
const TrailFilters = z.object({
  day: day.optional().describe("One day (UTC): from its midnight to the next"),
  from: z.iso.datetime({ offset: true }).or(day).optional().describe("Recorded at or after"),
  to: z.iso.datetime({ offset: true }).or(day).optional().describe("Recorded before"),
  actor: z.string().min(1).max(500).optional().describe("A key id, an EHR issuer, or a link id"),
  action: z.string().min(1).max(40).optional().describe("An access action (create, read, view, search, feedback…)"),
});
const TRAIL_FILTER_NAMES = [...Object.keys(TrailFilters.shape), "cursor", "token"];
const CASE_FILTER_NAMES = [...Object.keys(SearchQuery.shape), "token"];

/** A form's query: blank fields are no filter (a browser sends every field of a form). */
function filled(query: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries((query ?? {}) as Record<string, unknown>)) {
    if (Array.isArray(v)) throw new MedmmvError("INVALID_INPUT", `${k} is given more than once`);
    if (typeof v === "string" && v.trim() !== "") out[k] = v.trim();
  }
  return out;
}

function parsed<T extends z.ZodType>(schema: T, query: Record<string, string>): z.infer<T> {
  const r = schema.safeParse(query);
  if (!r.success) throw new MedmmvError("INVALID_INPUT", describeZodIssues(r.error, 5).message);
  return r.data;
}

/** The trail's query for a day or a period: a `day` is its midnight UTC to the next. */
function trailRange(f: z.infer<typeof TrailFilters>): { from?: string; to?: string } {
  if (f.day) {
    const from = new Date(`${f.day}T00:00:00.000Z`);
    return { from: from.toISOString(), to: new Date(from.getTime() + 86_400_000).toISOString() };
  }
  return { from: f.from ? new Date(f.from).toISOString() : undefined, to: f.to ? new Date(f.to).toISOString() : undefined };
}

/**
 * The auditor pages (docs/api.md#auditor-pages): server-rendered HTML with no script, opened
 * with an auditor link (`?token=` from POST /audit-links) or with the key in the
 * Authorization header; every page and export needs the audit permission (auditor, admin)
 * and is itself an access in the trail. Errors are pages too.
 */
export const auditorPageRoutes: FastifyPluginAsyncZod<RouteDeps & { secret: Buffer }> = async (app, deps) => {
  const { service, store, config, secret, gate, credentials, keys, access } = deps;
  const refused = () => new MedmmvError("UNAUTHORIZED", REFUSED);
  const authenticate = async (request: FastifyRequest<{ Querystring: { token?: string } }>): Promise<string> => {
    const token = request.query?.token;
    return linkOrKeyOwner(request, { token, claims: token === undefined ? null : verifyAuditorLink(token, secret), linkId: auditorLinkId }, { keys, credentials, refused });
  };
  app.addHook("onRequest", gate.hook(authenticate as Authenticate));
  app.setErrorHandler((err, request, reply) => {
    const h = toHttpError(err, config);
    if (h.status >= 500) request.log.error({ code: h.code, statusCode: h.status }, "auditor page failed");
    if (h.headers) void reply.headers(h.headers);
    const nonce = newViewNonce();
    const title = h.status === 400 ? "Request not understood" : h.status === 401 ? "Link not accepted" : h.status === 403 ? "Not for this role" : h.status === 404 ? "Not found" : h.status === 429 ? "Too many requests" : "Server error";
    const message = h.status >= 500 ? "The page could not be made; the server log names the request." : h.message;
    const hint = h.status === 401 ? "Ask for a new auditor link; they expire." : undefined;
    return sendHtml(reply.status(h.status), renderViewMessageHtml({ title, message, hint, nonce }), viewContentSecurityPolicy(nonce, { script: false }));
  });

  const tokenOf = (request: FastifyRequest) => (request.query as { token?: string }).token;

  app.get(
    "/audit",
    {
      schema: {
        tags: ["audit"],
        summary: "Auditor page (HTML): the team's cases, searched with GET /cases's filters (auditor, admin)",
        description: "A filter the search does not know is refused (400, naming the accepted ones); blank form fields are no filter.",
        querystring: PageQuery,
        response: { 200: z.string().describe("HTML page"), ...errorResponses },
      },
    },
    async (request, reply) => {
      const raw = filled(request.query);
      refuseUnknownFilters(raw, CASE_FILTER_NAMES);
      const { token: _token, ...filters } = raw;
      const q = parsed(SearchQuery, filters);
      const page = await access.audited(
        request,
        "search",
        null,
        async () => service.list(requirePermission(request, "audit"), q as unknown as Omit<ListCasesQuery, "tenant" | "owner">),
        (out) => ({ results: out.items.length, filters: searchFilters(q), caseIds: out.items.map((i) => i.id).join(" "), via: "auditor-page" }),
      );
      const field = (name: string, label: string, extra: Partial<FormField> = {}): FormField => ({ name, label, value: filters[name] ?? "", ...extra });
      const yesNo: Array<[string, string]> = [["", "any"], ["true", "yes"], ["false", "no"]];
      const fields: FormField[] = [
        field("from", "created from (date)", { type: "date" }),
        field("to", "created before (date)", { type: "date" }),
        field("status", "status", { options: [["", "any"], ["queued", "queued"], ["running", "running"], ["completed", "completed"], ["abstained", "abstained"], ["failed", "failed"]] }),
        field("submittedBy", "submitted by (key id)"),
        field("answer", "answer (letter or text)"),
        field("abstained", "abstained", { options: yesNo }),
        field("filteredOrRefused", "filtered or refused", { options: yesNo }),
        field("feedback", "card feedback", { options: [["", "any"], ["accepted", "accepted"], ["overridden", "overridden"]] }),
        field("minUnsupportedClaims", "at least N unsupported claims", { type: "number" }),
        field("model", "model"),
        field("pathway", "pathway"),
      ];
      const nonce = newViewNonce();
      const html = renderAuditorCasesPage({ token: tokenOf(request), nonce, fields, items: page.items, next: page.nextCursor ? { ...filters, cursor: page.nextCursor } : null });
      return sendHtml(reply, html, viewContentSecurityPolicy(nonce, { script: false, forms: true }));
    },
  );

  app.get(
    "/audit/cases/:id",
    {
      schema: {
        tags: ["audit"],
        summary: "Auditor page (HTML): one case's access trail as a table (who, what, when, from where, outcome), its card feedback and a link to its audit view",
        params: z.object({ id: z.string().min(1).max(200) }),
        querystring: PageQuery.extend({ cursor: z.string().max(500).optional() }),
        response: { 200: z.string().describe("HTML page"), ...errorResponses },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      const scope = await access.guard(request, "audit-read", "audit");
      const found = await access.audited(
        request,
        "audit-read",
        id,
        async () => {
          const events = await store.listAccess({ tenant: scope.tenant, caseId: id, limit: TRAIL_PAGE, cursor: request.query.cursor ?? null });
          // The case itself, when it is still there (its trail outlives it).
          const record = await service.get(scope, id).catch((err: unknown) => {
            if (isMedmmvError(err) && err.code === "NOT_FOUND") return null;
            throw err;
          });
          return { events, record };
        },
        (out) => ({ results: out.events.items.length, via: "auditor-page" }),
      );
      const token = tokenOf(request);
      const extra: string[] = [];
      if (found.record) {
        const viewToken = signViewLink({ caseId: id, owner: request.owner, keyId: credentials.keyId(request.owner) }, secret, VIEW_LINK_FROM_AUDIT_SEC);
        extra.push(
          `<p data-testid="case-facts">Submitted by ${escapeHtml(found.record.submittedBy || "a local run")} at ${escapeHtml(found.record.createdAt)}; ${escapeHtml(found.record.status)}. <a href="${pageHref(`/cases/${encodeURIComponent(id)}/view`, { token: viewToken })}">Open its audit view</a> (a view link made with your key: the trail names it and you).</p>`,
        );
        const feedback = await cardFeedback(store, { id, tenant: scope.tenant });
        for (const f of feedback) extra.push(`<p data-testid="feedback">CDS card feedback: <b>${escapeHtml(f.text)}</b> \u2014 ${escapeHtml(f.by)}, ${escapeHtml(f.at)}</p>`);
      } else extra.push('<p class="muted" data-testid="case-facts">The case itself is gone (deleted or purged); its trail stays.</p>');
      const nonce = newViewNonce();
      const html = renderAuditorTrailPage({
        token,
        nonce,
        title: `Case ${id}: access trail`,
        intro: "Every access to the case, oldest first: who, what, when, from which address, and the outcome.",
        path: `/audit/cases/${encodeURIComponent(id)}`,
        fields: null,
        rows: found.events.items.map(trailRow),
        next: found.events.nextCursor ? { cursor: found.events.nextCursor } : null,
        exports: [],
        extra,
      });
      return sendHtml(reply, html, viewContentSecurityPolicy(nonce, { script: false, forms: true }));
    },
  );

  /** The trail's filters from a page's query (unknown ones refused), and the store's query for them. */
  const trailQuery = (request: FastifyRequest, tenant: string): { filters: Record<string, string>; query: Omit<AccessQuery, "limit" | "cursor"> } => {
    const raw = filled(request.query);
    refuseUnknownFilters(raw, TRAIL_FILTER_NAMES);
    const { token: _token, cursor: _cursor, ...filters } = raw;
    const f = parsed(TrailFilters, filters);
    return { filters, query: { tenant, ...trailRange(f), actorId: f.actor, action: f.action } };
  };

  app.get(
    "/audit/trail",
    {
      schema: {
        tags: ["audit"],
        summary: "Auditor page (HTML): the team's access trail by day or period, actor and action, oldest first, with CSV and FHIR NDJSON exports",
        querystring: PageQuery,
        response: { 200: z.string().describe("HTML page"), ...errorResponses },
      },
    },
    async (request, reply) => {
      const scope = await access.guard(request, "audit-read", "audit");
      const { filters, query } = trailQuery(request, scope.tenant);
      const cursor = (request.query as { cursor?: string }).cursor ?? null;
      const page = await access.audited(request, "audit-read", null, () => store.listAccess({ ...query, limit: TRAIL_PAGE, cursor }), (p) => ({ results: p.items.length, filters: searchFilters(filters), via: "auditor-page" }));
      const token = tokenOf(request);
      const field = (name: string, label: string, type?: FormField["type"]): FormField => ({ name, label, value: filters[name] ?? "", ...(type ? { type } : {}) });
      const nonce = newViewNonce();
      const html = renderAuditorTrailPage({
        token,
        nonce,
        title: "The team's access trail",
        intro: "Oldest first. A day is UTC midnight to midnight; from and to narrow it further or replace it.",
        path: "/audit/trail",
        fields: [field("day", "day", "date"), field("from", "from (date or instant)"), field("to", "before (date or instant)"), field("actor", "actor (key id, EHR issuer, link id)"), field("action", "action")],
        rows: page.items.map(trailRow),
        next: page.nextCursor ? { ...filters, cursor: page.nextCursor } : null,
        exports: [
          { label: "CSV", href: pageHref("/audit/trail.csv", { ...filters, token }) },
          { label: "FHIR AuditEvent NDJSON", href: pageHref("/audit/trail.ndjson", { ...filters, token }) },
        ],
      });
      return sendHtml(reply, html, viewContentSecurityPolicy(nonce, { script: false, forms: true }));
    },
  );

  /** Every event of the selection, in pages of the store's largest; more than MAX_EXPORT_EVENTS is refused. */
  const allEvents = async (query: Omit<AccessQuery, "limit" | "cursor">): Promise<AccessEvent[]> => {
    const out: AccessEvent[] = [];
    let cursor: string | null = null;
    do {
      const page: { items: AccessEvent[]; nextCursor: string | null } = await store.listAccess({ ...query, limit: 1000, cursor });
      out.push(...page.items);
      cursor = page.nextCursor;
      if (out.length > MAX_EXPORT_EVENTS) throw new MedmmvError("INVALID_INPUT", `more than ${MAX_EXPORT_EVENTS} events match; export a shorter period (a day, or from/to)`);
    } while (cursor);
    return out;
  };

  const exportRoute = (format: "csv" | "ndjson") =>
    app.get(
      `/audit/trail.${format}`,
      {
        schema: {
          tags: ["audit"],
          summary: format === "csv" ? "The team's access trail as CSV (the auditor page's filters)" : "The team's access trail as FHIR R4 AuditEvents, one per line (NDJSON)",
          querystring: PageQuery,
          response: { 200: z.string().describe(format === "csv" ? "text/csv" : "application/fhir+ndjson"), ...errorResponses },
        },
      },
      async (request, reply) => {
        const scope = await access.guard(request, "audit-read", "audit");
        const { filters, query } = trailQuery(request, scope.tenant);
        const events = await access.audited(request, "audit-read", null, () => allEvents(query), (ev) => ({ results: ev.length, filters: searchFilters(filters), format, via: "auditor-page" }));
        const name = `medmmv-trail-${filters.day ?? "selection"}.${format}`;
        const base = `${request.protocol}://${request.host}`;
        const body =
          format === "csv"
            ? trailCsv(events.map(trailRow))
            : events.map((e) => JSON.stringify(toAuditEvent(e, (id) => `${base}/cases/${encodeURIComponent(id)}`))).join("\n") + (events.length ? "\n" : "");
        return reply
          .header("cache-control", "no-store")
          .header("content-disposition", `attachment; filename="${name.replace(/[^A-Za-z0-9._-]/g, "_")}"`)
          .type(format === "csv" ? "text/csv; charset=utf-8" : "application/fhir+ndjson; charset=utf-8")
          .send(body);
      },
    );
  exportRoute("csv");
  exportRoute("ndjson");
};
