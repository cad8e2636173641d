import { z } from "zod";
import { Pathway } from "./pathway.js";
import { formatIssuePath } from "./zod-issues.js";

/**
 * Which branch failed, said plainly: a union's own message is "Invalid input", which tells a
 * client sending a pathway object nothing about the entry that is wrong (or the limit it passed).
 */
function unionMessage(issue: { input?: unknown; errors?: ReadonlyArray<ReadonlyArray<{ path: readonly PropertyKey[]; message: string }>> }): string {
  if (typeof issue.input === "string") return "a pathway id is 1 to 64 characters";
  const objectIssues = issue.errors?.[1] ?? [];
  if (typeof issue.input !== "object" || issue.input === null || objectIssues.length === 0) return "expected a pathway id (a string) or a pathway object";
  const shown = objectIssues.slice(0, 5).map((i) => `${formatIssuePath(i.path)}: ${i.message}`);
  return `not a valid pathway: ${shown.join("; ")}${objectIssues.length > shown.length ? `; and ${objectIssues.length - shown.length} more` : ""}`;
}

/** `ClinicalCase.pathway`: the id of a pathway in the registry, or (via the API) the pathway itself. */
export const CasePathwayRef = z
  .union([z.string().min(1).max(64).describe("Id of a pathway in the registry (bundled in pathways/ or in MEDMMV_PATHWAYS_DIR), e.g. \"bone-marrow\"; never a file path"), Pathway], {
    error: (issue) => (issue.code === "invalid_union" ? unionMessage(issue as Parameters<typeof unionMessage>[0]) : undefined),
  })
  .describe("The clinical pathway the case's reasoning must stay on (docs/architecture.md#clinical-pathways-and-conversations); each refined path is checked against its valid paths");
export type CasePathwayRef = z.infer<typeof CasePathwayRef>;
