import type { z } from "zod";
import { MedmmvError, type ErrorCode } from "../../errors.js";
import { formatIssuePath } from "../load-case.js";

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

/**
 * A bundle we refuse. Carried as a MedmmvError (the one error type) whose `issues` name
 * the element to fix; the HTTP layer renders them as an OperationOutcome for FHIR clients.
 */
export function fhirError(code: ErrorCode, issues: FhirIssue[]): MedmmvError {
  const shown = issues.slice(0, 20);
  const more = issues.length > shown.length ? ` (and ${issues.length - shown.length} more)` : "";
  return new MedmmvError(code, `the FHIR Bundle was refused: ${shown.map((i) => `${i.path}: ${i.message}`).join("; ")}${more}`, { details: { issues: shown } });
}

/** FHIRPath of an element below `at` (e.g. `Bundle.entry[2].resource` + ["code", "coding", 0]). */
export function fhirPath(at: string, path: readonly PropertyKey[]): string {
  if (!path.length) return at;
  const inner = formatIssuePath(path);
  return inner.startsWith("[") ? `${at}${inner}` : `${at}.${inner}`;
}

/** zod's problems with one resource, as FHIR issues anchored at that resource. */
export function zodToFhirIssues(error: z.ZodError, at: string): FhirIssue[] {
  return error.issues.map((i) => {
    const missing = i.code === "invalid_type" && /received undefined/.test(i.message);
    const fhirCode: FhirIssueType = missing
      ? "required"
      : i.code === "invalid_value" || i.code === "invalid_format"
        ? "value"
        : i.code === "too_big"
          ? "too-long"
          : i.code === "unrecognized_keys"
            ? "structure"
            : i.code === "invalid_type"
              ? "structure"
              : "invariant";
    return { path: fhirPath(at, i.path), message: missing ? "is required" : i.message, fhirCode };
  });
}
