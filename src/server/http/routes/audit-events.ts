import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { FastifyRequest } from "fastify";
import { z } from "zod";
import { auditEventBundle } from "../audit-event-fhir.js";
import { FHIR_JSON } from "../fhir-requests.js";
import { requirePermission } from "../auth.js";
import { CaseIdParams, errorResponses } from "../schemas.js";
import type { RouteDeps } from "./route-deps.js";

const Page = {
  limit: z.coerce.number().int().min(1).max(1000).default(100).describe("Page size (1–1000)"),
  cursor: z.string().max(500).optional().describe("From the `next` link of the previous page"),
};
const instant = (what: string) => z.iso.datetime({ offset: true }).or(z.iso.date()).optional().describe(what);
const TrailQuery = z.object({
  ...Page,
  from: instant("Recorded at or after (ISO 8601 date or instant)"),
  to: instant("Recorded before (ISO 8601 date or instant)"),
  actor: z.string().min(1).max(500).optional().describe("An actor id: a key id, an EHR issuer, or a view link id"),
  action: z.enum(["create", "read", "events", "graph", "fhir", "turns", "view", "view-link", "export", "delete", "search", "audit-read", "purge", "feedback", "audit-link"]).optional(),
});

const AuditBundle = z.looseObject({ resourceType: z.literal("Bundle"), type: z.literal("searchset") }).describe("AuditEventBundle: a FHIR R4 searchset Bundle of AuditEvents (IHE BALP)");

/** The canonical ISO instant a `from`/`to` stands for (a date is its midnight UTC). */
const iso = (v: string | undefined) => (v === undefined ? undefined : new Date(v).toISOString());

/**
 * The access trail as FHIR AuditEvents, for auditors and admins: one case's (it outlives the
 * case), or the tenant's, oldest first. Reading the trail is itself an access in it.
 */
export const auditEventRoutes: FastifyPluginAsyncZod<RouteDeps> = async (app, { store, access }) => {
  const urls = (request: FastifyRequest, path: string, query: Record<string, unknown>, next: string | null) => {
    const base = `${request.protocol}://${request.host}`;
    const qs = (extra: Record<string, unknown>) => {
      const p = new URLSearchParams();
      for (const [k, v] of Object.entries({ ...query, ...extra })) if (v !== undefined && v !== null) p.set(k, String(v));
      const s = p.toString();
      return s ? `?${s}` : "";
    };
    return { self: `${base}${path}${qs({})}`, next: next ? `${base}${path}${qs({ cursor: next })}` : null, caseUrl: (id: string) => `${base}/cases/${encodeURIComponent(id)}` };
  };

  app.get(
    "/cases/:id/audit-events",
    {
      schema: {
        tags: ["audit"],
        summary: "Who accessed a case, when, how, with what outcome: its access trail as FHIR AuditEvents (auditor, admin)",
        description: "Kept after the case is deleted or purged. Never holds case content.",
        params: CaseIdParams,
        querystring: z.object(Page),
        response: { 200: AuditBundle, ...errorResponses },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      const page = await access.audited(
        request,
        "audit-read",
        id,
        async () => {
          const scope = requirePermission(request, "audit");
          return store.listAccess({ tenant: scope.tenant, caseId: id, limit: request.query.limit, cursor: request.query.cursor ?? null });
        },
        (p) => ({ results: p.items.length }),
      );
      const u = urls(request, `/cases/${encodeURIComponent(id)}/audit-events`, { limit: request.query.limit }, page.nextCursor);
      // Sent as built (the response schema only documents it).
      return reply.type(`${FHIR_JSON}; charset=utf-8`).serializer((p: unknown) => JSON.stringify(p)).send(auditEventBundle(page.items, u.caseUrl, u.self, u.next));
    },
  );

  app.get(
    "/audit-events",
    {
      schema: {
        tags: ["audit"],
        summary: "The tenant's access trail as FHIR AuditEvents, oldest first (auditor, admin)",
        querystring: TrailQuery,
        response: { 200: AuditBundle, ...errorResponses },
      },
    },
    async (request, reply) => {
      const q = request.query;
      const page = await access.audited(
        request,
        "audit-read",
        null,
        async () => {
          const scope = requirePermission(request, "audit");
          return store.listAccess({ tenant: scope.tenant, from: iso(q.from), to: iso(q.to), actorId: q.actor, action: q.action, limit: q.limit, cursor: q.cursor ?? null });
        },
        (p) => ({ results: p.items.length }),
      );
      const u = urls(request, "/audit-events", { from: q.from, to: q.to, actor: q.actor, action: q.action, limit: q.limit }, page.nextCursor);
      // Sent as built (the response schema only documents it).
      return reply.type(`${FHIR_JSON}; charset=utf-8`).serializer((p: unknown) => JSON.stringify(p)).send(auditEventBundle(page.items, u.caseUrl, u.self, u.next));
    },
  );
};
