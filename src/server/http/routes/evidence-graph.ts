import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { MedmmvError } from "../../../core/contracts/errors.js";
import { EvidenceGraph } from "../../../core/evidence/evidence-graph.js";
import { toCytoscape } from "../../../core/evidence/cytoscape.js";
import { isTerminal } from "../../service/case-service.js";
import { CaseIdParams, ErrorBody, errorResponses } from "../schemas.js";
import type { RouteDeps } from "./route-deps.js";

const GraphQuery = z.object({
  scope: z.enum(["path", "full"]).default("path").describe("`path`: the selected path's supporting subgraph E_p; `full`: the whole evidence graph E"),
  format: z.enum(["graphology", "cytoscape"]).default("graphology").describe("graphology export() JSON, or Cytoscape.js elements JSON"),
});

export const evidenceGraphRoutes: FastifyPluginAsyncZod<RouteDeps> = async (app, { service }) => {
  app.get(
    "/cases/:id/evidence-graph",
    {
      schema: {
        tags: ["cases"],
        summary: "The evidence graph of a finished case",
        params: CaseIdParams,
        querystring: GraphQuery,
        response: { 200: z.record(z.string(), z.unknown()).describe("EvidenceGraph"), ...errorResponses, 409: ErrorBody },
      },
    },
    async (request) => {
      const { id } = request.params;
      const { scope, format } = request.query;
      const record = await service.get(request.owner, id);
      if (!isTerminal(record.status)) {
        throw new MedmmvError("CONFLICT", `case ${id} is ${record.status}; its evidence graph is available once it finishes`, { details: { status: record.status } });
      }
      const graph = scope === "full" ? record.fullEvidenceGraph : (record.result?.evidenceGraph ?? null);
      if (!graph) {
        throw new MedmmvError(
          "NOT_FOUND",
          scope === "path" ? `case ${id} has no selected path (status ${record.status}), so there is no path subgraph; try scope=full` : `case ${id} has no evidence graph (status ${record.status})`,
        );
      }
      if (format === "graphology") return graph;
      // Spread: the response schema is a record, and an interface type has no index signature to match it.
      return { ...toCytoscape(EvidenceGraph.import(graph)) };
    },
  );
};
