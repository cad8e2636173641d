import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import type { CaseRecord, CaseSummary } from "../../store/case-store.js";
import { requirePermission } from "../auth.js";
import { MedmmvError } from "../../../core/contracts/errors.js";
import { CaseIdParams, CaseList, CaseStatus, CaseView, errorResponses } from "../schemas.js";
import type { RouteDeps } from "./route-deps.js";

export function caseView(r: CaseRecord): z.infer<typeof CaseView> {
  return {
    caseId: r.id,
    status: r.status,
    progress: r.progress,
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
    case: r.input as unknown as Record<string, unknown>,
    result: r.result,
    error: r.error,
  };
}

const flag = z.enum(["true", "false"]).transform((v) => v === "true");

export const SearchQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20).describe("Page size (1–100)"),
  cursor: z.string().max(500).optional().describe("`nextCursor` of the previous page"),
  status: CaseStatus.optional().describe("Only cases in this status"),
  from: z.string().max(40).optional().describe("Created at or after (ISO 8601 date or instant)"),
  to: z.string().max(40).optional().describe("Created before (ISO 8601 date or instant)"),
  answer: z.string().min(1).max(500).optional().describe("The answer's option letter, or its whole text (case-insensitive)"),
  abstained: flag.optional().describe("true: only abstentions; false: only answered cases"),
  minUnsupportedClaims: z.coerce.number().int().min(0).max(10_000).optional().describe("At least this many claims of the chosen path not supported by the evidence"),
  model: z.string().min(1).max(200).optional().describe("A model that ran in any role"),
  promptHash: z.string().regex(/^[0-9a-fA-F]{8,64}$/, "a hex prompt-template hash").optional().describe("A prompt template's sha256 the case ran with"),
  pathway: z.string().min(1).max(200).optional().describe("The pathway id the case named"),
  submittedBy: z.string().min(1).max(200).optional().describe("The submitter's key id (auditors: any of the tenant)"),
  filteredOrRefused: flag.optional().describe("true: only cases where the provider's content filter stopped an agent or the model refused (part of the case was not examined); false: only those without"),
  feedback: z.enum(["accepted", "overridden"]).optional().describe("The last CDS Hooks feedback on the case's card"),
});

/** A search's filters as the trail records them: `name=value` pairs, the page's size and cursor left out. */
export function searchFilters(q: Record<string, unknown>): string {
  return Object.entries(q)
    .filter(([k, v]) => v !== undefined && k !== "limit" && k !== "cursor")
    .map(([k, v]) => `${k}=${String(v)}`)
    .join(" ");
}

/**
 * A misspelt filter would otherwise be dropped and the search answer the whole tenant: a
 * query parameter the search does not know is refused, naming the ones it does.
 */
export function refuseUnknownFilters(query: unknown, known: readonly string[] = Object.keys(SearchQuery.shape)): void {
  const unknown = Object.keys((query ?? {}) as Record<string, unknown>).filter((k) => !known.includes(k));
  if (unknown.length)
    throw new MedmmvError("INVALID_INPUT", `unknown filter${unknown.length === 1 ? "" : "s"} ${unknown.map((k) => JSON.stringify(k)).join(", ")}; the accepted ones are ${known.join(", ")}`, {
      details: { unknown, accepted: [...known] },
    });
}

export function searchRow(i: CaseSummary): z.infer<typeof CaseList>["items"][number] {
  return {
    caseId: i.id,
    status: i.status,
    answer: i.answer,
    answerSupport: i.answerSupport ?? null,
    abstained: i.abstained ?? null,
    unsupportedClaims: i.unsupportedClaims ?? null,
    hallucinations: i.hallucinations ?? null,
    models: i.models ?? [],
    pathway: i.pathway ?? null,
    submittedBy: i.submittedBy ?? "",
    filteredOrRefused: i.filteredOrRefused ?? null,
    feedback: i.feedback ?? null,
    createdAt: i.createdAt,
    updatedAt: i.updatedAt,
    finishedAt: i.finishedAt ?? null,
  };
}

/**
 * Cases: search, fetch, purge. A clinician reaches its own cases; an auditor or admin every
 * case of its tenant (admins alone may delete another's). A case out of reach is 404,
 * never 403, so its existence is not confirmed; a role that may not do the thing at all is 403.
 */
export const caseRoutes: FastifyPluginAsyncZod<RouteDeps> = async (app, { service, access }) => {
  app.get(
    "/cases",
    {
      schema: {
        tags: ["cases"],
        summary: "Search cases, newest first: a clinician's own, or (auditor, admin) the whole tenant's",
        querystring: SearchQuery,
        response: { 200: CaseList, ...errorResponses },
      },
      preValidation: async (request) => refuseUnknownFilters(request.query),
    },
    async (request) =>
      access.audited(
        request,
        "search",
        null,
        async () => {
          const scope = requirePermission(request, "read");
          const page = await service.list(scope, request.query);
          return { items: page.items.map(searchRow), nextCursor: page.nextCursor };
        },
        // Who searched for what, and which cases it was shown (ids only: the filters never hold case content beyond an answer).
        (out) => ({ results: out.items.length, filters: searchFilters(request.query), caseIds: out.items.map((i) => i.caseId).join(" ") }),
      ),
  );

  app.get(
    "/cases/:id",
    {
      schema: {
        tags: ["cases"],
        summary: "A case: status, progress, and the DiagnosisResult when finished",
        params: CaseIdParams,
        response: { 200: CaseView, ...errorResponses },
      },
    },
    async (request) => access.audited(request, "read", request.params.id, async () => caseView(await service.get(requirePermission(request, "read"), request.params.id))),
  );

  app.delete(
    "/cases/:id",
    {
      schema: {
        tags: ["cases"],
        summary: "Purge a case (its images, graphs, events and checkpoints; its access trail stays); a running case is cancelled",
        description: "A clinician deletes its own cases, an admin any case of its tenant; an auditor never (403).",
        params: CaseIdParams,
        response: { 204: z.null().describe("Deleted"), ...errorResponses },
      },
    },
    async (request, reply) => {
      await access.audited(request, "delete", request.params.id, () => service.delete(requirePermission(request, "delete"), request.params.id));
      return reply.status(204).send(null);
    },
  );
};
