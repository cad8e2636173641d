import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import type { FastifyInstance } from "fastify";
import { jsonSchemaTransform, jsonSchemaTransformObject } from "fastify-type-provider-zod";
import { VERSION } from "../../../core/version.js";
import { polishOpenApi, TAGS } from "../openapi-document.js";

type Transform = typeof jsonSchemaTransform;

/** POST /diagnose also takes multipart/form-data; zod describes only the JSON form, so add the other. */
const transform: Transform = (doc) => {
  const out = jsonSchemaTransform(doc);
  if (doc.url === "/diagnose" && out.schema && (out.schema as { body?: unknown }).body) {
    const json = (out.schema as { body: unknown }).body;
    (out.schema as { body: unknown }).body = {
      content: {
        "application/json": { schema: json },
        "multipart/form-data": {
          schema: {
            type: "object",
            required: ["case"],
            properties: {
              case: {
                type: "string",
                description:
                  "The ClinicalCase as JSON. An entry of `images` may omit `data` (or give a `path`, as CLI case files do): its bytes come from the file part whose field name equals the image id. File parts not listed in `images` are added with their field name as id.",
              },
            },
            additionalProperties: { type: "string", format: "binary", description: "An image file (JPEG, PNG, GIF, WebP or a DICOM Part 10 .dcm); the field name is the image id" },
          },
        },
        "application/fhir+json": {
          schema: {
            type: "object",
            required: ["resourceType", "type"],
            description:
              "A FHIR R4 Bundle (collection, searchset, transaction, batch, document or history) of one patient's record: Patient, Condition, Observation, MedicationStatement/MedicationRequest (and Medication), AllergyIntolerance, Procedure, Encounter, Immunization, Device, ImagingStudy, DiagnosticReport, DocumentReference, Composition, Media/Binary images; summarised to MEDMMV_FHIR_NOTES_BUDGET characters (provenance.fhirNotes) and de-identified. Other resource types are listed in provenance.ignoredResources. A bundle with no clinical fact is a 422. Errors are OperationOutcomes.",
            properties: { resourceType: { const: "Bundle" }, type: { type: "string" }, entry: { type: "array", items: { type: "object" } } },
          },
        },
      },
    };
  }
  return out;
};

/** The OpenAPI document is generated from the route schemas; JSON at /docs/json, UI at /docs. */
export async function registerSwagger(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: {
        title: "medmmv",
        version: VERSION,
        description:
          "MedMMV clinical reasoning behind a REST API: diversified rollouts, an evidence graph, hallucination-checked refinement and selection by Combined Uncertainty. Decision support for clinicians; not a diagnosis.",
        license: { name: "MIT", identifier: "MIT" },
      },
      servers: [
        { url: "/", description: "The server this document was fetched from" },
        { url: "http://127.0.0.1:8787", description: "Default local address (HOST:PORT)" },
      ],
      tags: TAGS,
      components: {
        securitySchemes: { bearer: { type: "http", scheme: "bearer", description: "A key from MEDMMV_API_KEYS" } },
      },
      security: [{ bearer: [] }],
    },
    transform,
    transformObject: (o) => polishOpenApi(jsonSchemaTransformObject(o)),
  });
  await app.register(swaggerUi, { routePrefix: "/docs", staticCSP: true });
}
