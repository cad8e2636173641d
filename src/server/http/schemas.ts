import { z } from "zod";
import { DiagnosisResult } from "../../core/contracts/diagnosis-result.js";

/** Response and parameter schemas shared by the routes; they are also the OpenAPI document. */
export const ErrorBody = z
  .object({
    statusCode: z.number().int().describe("HTTP status"),
    code: z.string().describe("Stable error code (e.g. INVALID_INPUT, NOT_FOUND, RATE_LIMITED)"),
    message: z.string().describe("What went wrong and, for client errors, what to change"),
    requestId: z.string().describe("Request id, also in the x-request-id header and the server logs"),
    issues: z
      .array(z.object({ path: z.string(), message: z.string() }))
      .optional()
      .describe("Validation problems, one per field"),
    details: z.record(z.string(), z.unknown()).optional().describe("Machine-readable specifics"),
  })
  .describe("Error");
export type ErrorBody = z.infer<typeof ErrorBody>;

export const CaseStatus = z.enum(["queued", "running", "completed", "abstained", "failed"]);

export const CaseIdParams = z.object({ id: z.string().min(1).max(200).describe("Case id (from POST /diagnose)") });

export const CaseAccepted = z
  .object({
    caseId: z.string(),
    status: CaseStatus,
    location: z.string().describe("Where to fetch the case"),
    events: z.string().describe("Server-Sent Events stream of the case's steps"),
  })
  .describe("CaseAccepted");

export const Progress = z.object({ step: z.string(), done: z.number().int(), total: z.number().int() });

export const CaseView = z
  .object({
    caseId: z.string(),
    status: CaseStatus,
    progress: Progress.nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
    case: z.record(z.string(), z.unknown()).describe("The case as accepted; images as references {id, sha256, mimeType, caption}"),
    result: DiagnosisResult.nullable().describe("The DiagnosisResult once the case is finished"),
    error: z.object({ code: z.string(), message: z.string() }).nullable(),
  })
  .describe("Case");

/** One search row: what a reviewer triages by, never the case's notes. */
export const CaseListItem = z.object({
  caseId: z.string(),
  status: CaseStatus,
  answer: z.object({ option: z.string().nullable(), text: z.string() }).nullable(),
  answerSupport: z.number().nullable().describe("Share of the chosen path's claims supported by the evidence"),
  abstained: z.boolean().nullable().describe("null until the case has finished"),
  unsupportedClaims: z.number().int().nullable().describe("Claims of the chosen path not supported (unsupported or contradicted)"),
  hallucinations: z.number().int().nullable().describe("Hallucinations the detector found, resolved or not"),
  models: z.array(z.string()).describe("Models that ran, any role"),
  pathway: z.string().nullable(),
  submittedBy: z.string().describe("Key id (or EHR issuer) that submitted it"),
  filteredOrRefused: z.boolean().nullable().describe("An agent was stopped by the provider's content filter or refused by the model (null: not finished, or finished before this was recorded)"),
  feedback: z.enum(["accepted", "overridden"]).nullable().describe("The last CDS Hooks feedback on the case's card"),
  createdAt: z.string(),
  updatedAt: z.string(),
  finishedAt: z.string().nullable(),
});

export const CaseList = z
  .object({
    items: z.array(CaseListItem),
    nextCursor: z.string().nullable().describe("Pass as `cursor` for the next page; null on the last page"),
  })
  .describe("CaseList");

export const errorResponses = {
  400: ErrorBody,
  401: ErrorBody,
  403: ErrorBody,
  404: ErrorBody,
  429: ErrorBody,
} as const;
