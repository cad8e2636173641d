import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import type { CaseRecord } from "../../store/case-store.js";
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

const ListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20).describe("Page size (1–100)"),
  cursor: z.string().max(500).optional().describe("`nextCursor` of the previous page"),
  status: CaseStatus.optional().describe("Only cases in this status"),
});

/** The caller's cases: list, fetch, purge. Another key's case is answered 404, never 403. */
export const caseRoutes: FastifyPluginAsyncZod<RouteDeps> = async (app, { service }) => {
  app.get(
    "/cases",
    {
      schema: {
        tags: ["cases"],
        summary: "List your cases, newest first",
        querystring: ListQuery,
        response: { 200: CaseList, ...errorResponses },
      },
    },
    async (request) => {
      const page = await service.list(request.owner, request.query);
      return {
        items: page.items.map((i) => ({ caseId: i.id, status: i.status, answer: i.answer, createdAt: i.createdAt, updatedAt: i.updatedAt })),
        nextCursor: page.nextCursor,
      };
    },
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
    async (request) => caseView(await service.get(request.owner, request.params.id)),
  );

  app.delete(
    "/cases/:id",
    {
      schema: {
        tags: ["cases"],
        summary: "Purge a case (its images, graphs, events and checkpoints); a running case is cancelled",
        params: CaseIdParams,
        response: { 204: z.null().describe("Deleted"), ...errorResponses },
      },
    },
    async (request, reply) => {
      await service.delete(request.owner, request.params.id);
      return reply.status(204).send(null);
    },
  );
};
