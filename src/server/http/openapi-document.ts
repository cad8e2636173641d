/**
 * What client generators need from the OpenAPI document beyond what the route schemas
 * say: a stable operationId per operation (method names in generated clients), every
 * operation's client errors, and examples. Applied to the finished document, so routes
 * added later get the same treatment (an operationId derived from method and path).
 */

import { operationOutcome } from "./operation-outcome.js";
import type { ErrorBody } from "./schemas.js";

type Json = Record<string, unknown>;

/** Names chosen for the operations clients call most; the rest are derived. */
const OPERATION_IDS: Record<string, string> = {
  "post /diagnose": "diagnose",
  "get /cases": "listCases",
  "get /cases/{id}": "getCase",
  "delete /cases/{id}": "deleteCase",
  "get /cases/{id}/events": "streamCaseEvents",
  "get /cases/{id}/evidence-graph": "getEvidenceGraph",
  "get /cases/{id}/fhir": "getCaseFhirBundle",
  "get /cases/{id}/view": "getAuditView",
  "post /cases/{id}/view-links": "createViewLink",
  "get /healthz": "getHealth",
  "get /readyz": "getReadiness",
  "get /cds-services": "getCdsDiscovery",
  "post /cds-services/medmmv-diagnosis": "callCdsPatientView",
};

export const TAGS = [
  { name: "cases", description: "Submit clinical cases (JSON, multipart or a FHIR Bundle) and read their results, events and evidence graphs" },
  { name: "audit", description: "The audit view of a case and signed links to it" },
  { name: "fhir", description: "Results as FHIR R4 resources" },
  { name: "cds-hooks", description: "CDS Hooks 2.0 service for EHRs" },
  { name: "operations", description: "Liveness and readiness probes" },
];

/** `get /cases/{id}/evidence-graph` → `getCasesIdEvidenceGraph`. */
function derivedOperationId(method: string, path: string): string {
  const words = path.split(/[/{}\-_.]+/).filter(Boolean);
  return method + words.map((w) => w[0]!.toUpperCase() + w.slice(1)).join("");
}

const ERROR_EXAMPLES: Record<string, { code: string; message: string }> = {
  "400": { code: "INVALID_INPUT", message: "invalid request body: question: question must not be empty" },
  "401": { code: "UNAUTHORIZED", message: "missing API key: send the header `Authorization: Bearer <key>` with a key from MEDMMV_API_KEYS" },
  "404": { code: "NOT_FOUND", message: "case case-3f1c… not found" },
  "409": { code: "CONFLICT", message: "case case-3f1c… is running; its result exists once it has finished" },
  "413": { code: "PAYLOAD_TOO_LARGE", message: "the request body is larger than the limit of 26214400 bytes; send fewer or smaller images" },
  "415": { code: "UNSUPPORTED_MEDIA", message: "unsupported Content-Type; send the case as application/json or multipart/form-data" },
  "422": { code: "UNPROCESSABLE", message: "the FHIR Bundle was refused: Bundle.entry[3].resource.subject.reference: reference \"Patient/x\" does not resolve to any entry of the bundle" },
  "429": { code: "RATE_LIMITED", message: "rate limit exceeded: retry after 12 s" },
  "4XX": { code: "INVALID_INPUT", message: "the request is malformed" },
};

const CASE_EXAMPLE = {
  question: "What is the most likely diagnosis?",
  notes: "A 58-year-old man with crushing substernal chest pain radiating to the left arm for 40 minutes. ECG: ST elevation in II, III and aVF. Troponin I 2.4 ng/mL.",
  options: { A: "Acute pericarditis", B: "Inferior ST-elevation myocardial infarction", C: "Aortic dissection" },
  patient: { age: 58, sex: "male" },
};

/** What FHIR clients get instead of the JSON error (src/server/http/operation-outcome.ts). */
const OPERATION_OUTCOME = {
  type: "object",
  description: "FHIR R4 OperationOutcome: one issue per problem; `expression` names the bad element",
  required: ["resourceType", "issue"],
  properties: {
    resourceType: { const: "OperationOutcome" },
    id: { type: "string" },
    issue: {
      type: "array",
      items: {
        type: "object",
        required: ["severity", "code"],
        properties: {
          severity: { enum: ["fatal", "error", "warning", "information"] },
          code: { type: "string", description: "FHIR issue type (invalid, required, value, not-found, login, too-costly, …)" },
          details: { type: "object", description: "`coding[0].code` is the medmmv error code; `text` the message" },
          diagnostics: { type: "string" },
          expression: { type: "array", items: { type: "string" } },
        },
      },
    },
  },
};

/** The OperationOutcome the server sends for `status`: built by the same function, so the example cannot drift. */
function outcomeExample(status: string) {
  return operationOutcome(errorExample(status));
}

function errorExample(status: string): ErrorBody {
  const e = ERROR_EXAMPLES[status] ?? ERROR_EXAMPLES["4XX"]!;
  return { statusCode: status === "4XX" ? 400 : Number(status), ...e, requestId: "5b0f6f2e-7c1d-4a8e-9a61-2d3c4b5a6f70" };
}

export function polishOpenApi<T>(doc: T): T {
  const d = doc as Json;
  const paths = (d.paths ?? {}) as Record<string, Record<string, Json>>;
  // One error schema for operations whose routes list no client errors (the probes, discovery).
  let errorSchema: unknown;
  for (const ops of Object.values(paths)) for (const op of Object.values(ops)) errorSchema ??= ((op.responses as Json | undefined)?.["400"] as { content?: Record<string, { schema?: unknown }> } | undefined)?.content?.["application/json"]?.schema;
  const used = new Set<string>();
  for (const [path, ops] of Object.entries(paths)) {
    for (const [method, op] of Object.entries(ops)) {
      let id = (op.operationId as string | undefined) ?? OPERATION_IDS[`${method} ${path}`] ?? derivedOperationId(method, path);
      while (used.has(id)) id += "2";
      used.add(id);
      op.operationId = id;
      const responses = (op.responses ??= {}) as Record<string, Json>;
      if (!Object.keys(responses).some((s) => s.startsWith("4")) && errorSchema) {
        responses["4XX"] = { description: "Client error (a malformed request); the body says what to fix", content: { "application/json": { schema: errorSchema } } };
      }
      // FHIR routes answer in FHIR: the resource, and OperationOutcomes for errors.
      if (path.endsWith("/fhir")) {
        for (const [status, r] of Object.entries(responses)) {
          const content = r.content as Record<string, Json> | undefined;
          const json = content?.["application/json"];
          if (!content || !json) continue;
          delete content["application/json"];
          content["application/fhir+json"] = status.startsWith("4") ? { schema: OPERATION_OUTCOME, example: outcomeExample(status) } : json;
        }
      }
      for (const [status, r] of Object.entries(responses)) {
        const json = (r.content as Record<string, Json> | undefined)?.["application/json"];
        if (status.startsWith("4") && json && json.example === undefined) json.example = errorExample(status);
      }
      const body = ((op.requestBody as Json | undefined)?.content as Record<string, Json> | undefined)?.["application/json"];
      if (path === "/diagnose" && method === "post" && body) body.example = CASE_EXAMPLE;
    }
  }
  return doc;
}
