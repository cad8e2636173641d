import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { resultToFhirBundle } from "../../../core/intake/fhir/result-to-bundle.js";
import { MedmmvError } from "../../../core/contracts/errors.js";
import { isTerminal } from "../../service/case-service.js";
import { FHIR_JSON } from "../fhir-requests.js";
import { requirePermission } from "../auth.js";
import { CaseIdParams, ErrorBody, errorResponses } from "../schemas.js";
import type { RouteDeps } from "./route-deps.js";

const FhirBundleBody = z
  .object({
    resourceType: z.literal("Bundle"),
    type: z.string().describe('"collection"'),
    entry: z.array(z.object({ fullUrl: z.string().optional(), resource: z.object({ resourceType: z.enum(["ClinicalImpression", "Provenance", "Condition"]) }).optional() })).optional(),
  })
  .describe("FhirBundle: a FHIR R4 Bundle (collection) with a ClinicalImpression, its Provenance, and the ranked differential as Conditions (provisional, then differential)");

/** A finished case as FHIR R4, for EHRs that store decision-support results as resources (also the audit page's download, under its path). */
export const fhirRoutes: FastifyPluginAsyncZod<RouteDeps & { path?: string }> = async (app, { service, access, path = "/cases/:id/fhir" }) => {
  app.get(
    path,
    {
      config: { fhir: true },
      schema: {
        tags: ["fhir"],
        summary: "A finished case as a FHIR R4 Bundle (ClinicalImpression + Provenance)",
        description: "Errors are FHIR OperationOutcomes. 409 while the case is still running.",
        params: CaseIdParams,
        response: { 200: FhirBundleBody, ...errorResponses, 409: ErrorBody },
      },
    },
    async (request, reply) => {
      const record = await access.audited(request, "fhir", request.params.id, async () => {
        const r = await service.get(requirePermission(request, "read"), request.params.id);
        if (!isTerminal(r.status) || !r.result) {
          throw new MedmmvError("CONFLICT", `case ${r.id} is ${r.status}; its FHIR result exists once it has finished`, { details: { caseId: r.id, status: r.status } });
        }
        return r;
      });
      const bundle = resultToFhirBundle({ id: record.id, input: record.input, result: record.result! });
      // Serialized as it is: the body is typed against the R4 definitions where it is built,
      // and the response schema only documents it (it would strip what it does not list).
      return reply.type(`${FHIR_JSON}; charset=utf-8`).serializer((p: unknown) => JSON.stringify(p)).send(bundle);
    },
  );
};
