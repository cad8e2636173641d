import type { OperationOutcome, OperationOutcomeIssue } from "fhir/r4.js";
import type { FhirIssueType } from "../../core/intake/fhir/fhir-error.js";
import type { ErrorBody } from "./schemas.js";

/** The issue type of an error that carries no FHIR-specific issues, by HTTP status. */
function issueType(status: number): FhirIssueType {
  switch (status) {
    case 401: return "login";
    case 403: return "forbidden";
    case 404: return "not-found";
    case 409: return "conflict";
    case 413: return "too-costly";
    case 415: return "not-supported";
    case 422: return "processing";
    case 429: return "throttled";
  }
  return status >= 500 ? "exception" : "invalid";
}

type Issue = { path: string; message: string; fhirCode?: FhirIssueType };

/**
 * The error a FHIR client gets: an R4 OperationOutcome with one issue per problem, each
 * naming the element to fix in `expression`; our error code rides along in `details`.
 */
export function operationOutcome(body: ErrorBody): OperationOutcome {
  // Each issue's details say that issue, briefly: repeating the whole message in every issue
  // made twenty issues a hundred kilobytes that said nothing more.
  const details = (text: string) => ({ coding: [{ system: "urn:medmmv:error-code", code: body.code }], text: short(text) });
  const issues = (body.issues ?? []) as Issue[];
  const severity = body.statusCode >= 500 ? "fatal" : "error";
  const issue: OperationOutcomeIssue[] = issues.length
    ? issues.map((i) =>
        // Only FHIR issues carry a FHIRPath; a request-validation path goes into the text.
        i.fhirCode
          ? { severity, code: i.fhirCode, details: details(i.message), diagnostics: i.message, ...(i.path !== "(root)" ? { expression: [i.path] } : {}) }
          : { severity, code: issueType(body.statusCode), details: details(`${i.path}: ${i.message}`), diagnostics: `${i.path}: ${i.message}` },
      )
    : [{ severity, code: issueType(body.statusCode), details: details(body.message), diagnostics: body.message }];
  return { resourceType: "OperationOutcome", id: body.requestId, issue };
}

/** A human-readable line for details.text: the first sentence-sized part of a message. */
function short(text: string): string {
  return text.length <= 160 ? text : `${text.slice(0, 157).trimEnd()}…`;
}
