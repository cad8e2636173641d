import type { CasePathwayRef } from "../contracts/case-pathway-ref.js";
import { casePathway } from "./path-conflict.js";
import { describePath } from "./consistency.js";

/**
 * The case's pathway as the case block shows it to every agent: its steps and valid paths,
 * so rollouts and repairs can reason along one of them. It is client text (a pathway object
 * may come with the request), so the caller neutralises it like the rest of the case.
 */
export function renderPathwayForPrompt(ref: CasePathwayRef | undefined): string | null {
  const p = casePathway(ref);
  if (!p) return null;
  const steps = p.steps.map((s) => `- ${s.id}: ${s.question} (${s.categories.map((c) => `${c.id} = ${c.label}`).join("; ")})`);
  const paths = p.paths.map((x) => `- ${describePath(x)}`);
  return [`Clinical pathway "${p.title}": the reasoning must follow one of its valid paths.`, "Steps:", ...steps, "Valid paths:", ...paths].join("\n");
}
