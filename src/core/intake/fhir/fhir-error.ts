import type { z } from "zod";
import { MedmmvError, type ErrorCode } from "../../contracts/errors.js";
import { formatIssuePath } from "../../contracts/zod-issues.js";

/** FHIR issue-type codes we report (R4 value set http://hl7.org/fhir/issue-type). */
export type FhirIssueType =
  | "invalid" | "structure" | "required" | "value" | "invariant" | "code-invalid" | "not-supported"
  | "too-costly" | "not-found" | "processing" | "exception" | "security" | "login"
  | "forbidden" | "throttled" | "conflict" | "duplicate" | "too-long";

/** One problem with a FHIR request: `path` is the FHIRPath of the bad element. */
export interface FhirIssue {
  path: string;
  message: string;
  fhirCode: FhirIssueType;
}

/** The statuses a refused bundle gets: malformed 400, inconsistent 422, too big 413, not an image 415. */
export type RefusalCode = Extract<ErrorCode, "INVALID_INPUT" | "UNPROCESSABLE" | "PAYLOAD_TOO_LARGE" | "UNSUPPORTED_MEDIA">;

/**
 * A bundle we refuse. Carried as a MedmmvError (the one error type) whose `issues` name
 * the element to fix; the HTTP layer renders them as an OperationOutcome for FHIR clients.
 */
export function fhirError(code: RefusalCode, issues: FhirIssue[], reason?: string): MedmmvError {
  const shown = issues.slice(0, 20);
  const more = issues.length > shown.length ? ` (and ${issues.length - shown.length} more)` : "";
  return new MedmmvError(code, `the FHIR Bundle was refused: ${shown.map((i) => `${i.path}: ${i.message}`).join("; ")}${more}`, { details: { issues: shown, ...(reason ? { reason } : {}) } });
}

/** FHIRPath of an element below `at` (e.g. `Bundle.entry[2].resource` + ["code", "coding", 0]). */
export function fhirPath(at: string, path: readonly PropertyKey[]): string {
  if (!path.length) return at;
  const inner = formatIssuePath(path);
  return inner.startsWith("[") ? `${at}${inner}` : `${at}.${inner}`;
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let v = input;
  for (const k of path) {
    if (!v || typeof v !== "object") return undefined;
    v = (v as Record<PropertyKey, unknown>)[k];
  }
  return v;
}

function issueType(i: z.core.$ZodIssue, value: unknown): FhirIssueType {
  // Whatever zod calls it (a wrong type, a value outside an enum), an absent element is missing.
  if (value === undefined && i.code !== "unrecognized_keys" && i.code !== "custom") return "required";
  switch (i.code) {
    case "invalid_type":
      return "structure";
    case "invalid_value":
    case "invalid_format":
      return "value";
    case "too_big":
      return "too-long";
    case "too_small":
      // An element of cardinality 1..* sent empty is missing, in FHIR's terms.
      return Array.isArray(value) && value.length === 0 ? "required" : "value";
    case "unrecognized_keys":
      return "structure";
    default:
      return "invariant";
  }
}

/** zod's problems with one resource (`input`), as FHIR issues anchored at that resource. */
export function zodToFhirIssues(error: z.ZodError, at: string, input: unknown): FhirIssue[] {
  return error.issues.map((i) => {
    const value = valueAt(input, i.path);
    const fhirCode = issueType(i, value);
    return { path: fhirPath(at, i.path), message: fhirCode === "required" ? "is required" : i.message, fhirCode };
  });
}
