import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { MedmmvError } from "../../../core/contracts/errors.js";
import type { SerializedEvidenceGraph } from "../../../core/contracts/evidence.js";
import { EvidenceGraph } from "../../../core/evidence/evidence-graph.js";
import { toCytoscape } from "../../../core/evidence/cytoscape.js";
import { toGexf, toGraphml } from "../../../core/evidence/graph-formats.js";
import { isTerminal } from "../../service/case-service.js";
import { requirePermission } from "../auth.js";
import { CaseIdParams, ErrorBody, errorResponses } from "../schemas.js";
import type { RouteDeps } from "./route-deps.js";

const GraphQuery = z.object({
  scope: z.enum(["path", "full"]).default("path").describe("`path`: the selected path's supporting subgraph E_p; `full`: the whole evidence graph E"),
  format: z
    .enum(["json", "graphology", "cytoscape", "graphml", "gexf"])
    .default("json")
    .describe("`json` (= `graphology`): graphology export() JSON; `cytoscape`: Cytoscape.js elements JSON; `graphml` (Gephi, Cytoscape desktop, networkx) and `gexf` (Gephi): every attribute kept, nested ones as JSON strings"),
});

/** The analysts' formats: a download with its own media type and a file name. */
const FILES = {
  graphml: { type: "application/graphml+xml; charset=utf-8", ext: "graphml", write: toGraphml },
  gexf: { type: "application/gexf+xml; charset=utf-8", ext: "gexf", write: toGexf },
} as const;

/** Registered in the API (API key) and, under the audit page's path, behind the page's own authentication (its downloads). */
export const evidenceGraphRoutes: FastifyPluginAsyncZod<RouteDeps & { path?: string }> = async (app, { service, access, path = "/cases/:id/evidence-graph" }) => {
  app.get(
    path,
    {
      schema: {
        tags: ["cases"],
        summary: "The evidence graph of a finished case, as JSON, Cytoscape JSON, GraphML or GEXF",
        params: CaseIdParams,
        querystring: GraphQuery,
        response: {
          200: z.record(z.string(), z.unknown()).describe("EvidenceGraph (JSON formats); GraphML and GEXF are XML downloads"),
          ...errorResponses,
          409: ErrorBody,
        },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      const { scope, format } = request.query;
      const file = format === "graphml" || format === "gexf" ? FILES[format] : null;
      const graph = await access.audited(
        request,
        file ? "export" : "graph",
        id,
        async () => {
          const record = await service.get(requirePermission(request, "read"), id);
          if (!isTerminal(record.status)) {
            throw new MedmmvError("CONFLICT", `case ${id} is ${record.status}; its evidence graph is available once it finishes`, { details: { status: record.status } });
          }
          const g = scope === "full" ? record.fullEvidenceGraph : (record.result?.evidenceGraph ?? null);
          if (!g) {
            throw new MedmmvError(
              "NOT_FOUND",
              scope === "path" ? `case ${id} has no selected path (status ${record.status}), so there is no path subgraph; try scope=full` : `case ${id} has no evidence graph (status ${record.status})`,
            );
          }
          return g as SerializedEvidenceGraph;
        },
        () => ({ format, scope }),
      );
      if (file) {
        return reply
          .type(file.type)
          .header("content-disposition", `attachment; filename="case-${id.replace(/[^A-Za-z0-9._-]/g, "_")}-${scope}.${file.ext}"`)
          .serializer((s: unknown) => s as string)
          .send(file.write(graph) as unknown as Record<string, unknown>);
      }
      if (format === "cytoscape") return { ...toCytoscape(EvidenceGraph.import(graph)) };
      return graph as unknown as Record<string, unknown>;
    },
  );
};
