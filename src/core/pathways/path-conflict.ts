import type { ContextConflict, HdReport } from "../contracts/diagnosis-result.js";
import type { PathOutput } from "../contracts/reasoning-path.js";
import { checkConsistency, contextConflictIssue, describeLabels, describePath, type ConsistencyResult, type LabelledSequence } from "./consistency.js";
import { labelAnswer } from "./labeller.js";
import { loadPathway } from "./load-pathway.js";
import type { Pathway } from "../contracts/pathway.js";
import type { CasePathwayRef } from "../contracts/case-pathway-ref.js";

/** A case's pathway as an object: an id (checked at intake) is loaded from pathways/, once per process. */
export function casePathway(ref: CasePathwayRef | undefined): Pathway | undefined {
  if (ref === undefined) return undefined;
  return typeof ref === "string" ? loadPathway(ref) : ref;
}

/**
 * Map a reasoning path onto the pathway: every step but the last is labelled from the
 * whole path's text (steps and claims, one clause each); the last step — the pathway's
 * outcome — from the committed answer, falling back to the path's text when the answer
 * names no category.
 */
export function labelPath(pathway: Pathway, path: PathOutput): LabelledSequence {
  const text = path.steps.flatMap((s) => [s.text, ...s.claims]).join(".\n");
  const seq: LabelledSequence = {};
  pathway.steps.forEach((step, i) => {
    let r = i === pathway.steps.length - 1 ? labelAnswer(path.answer.text, step) : undefined;
    if (!r || !r.hit) r = labelAnswer(text, step);
    if (r.hit) seq[step.id] = r.category;
  });
  return seq;
}

function conflictIssue(pathway: Pathway, seq: LabelledSequence, r: ConsistencyResult): string {
  const closest = r.closest && pathway.paths.find((p) => p.id === r.closest!.path);
  const hint = closest && r.closest!.disagrees.length ? `; the closest valid path, "${closest.id}" (${closest.outcome}), has ${describeLabels(closest.sequence, r.closest!.disagrees)}` : "";
  return `${contextConflictIssue(pathway.id, seq, r.conflictingSteps)}${hint}`;
}

/** The conflict of a path with the pathway, or null when some valid path agrees with all its labels. */
export function findContextConflict(pathway: Pathway, path: PathOutput): ContextConflict | null {
  const labels = labelPath(pathway, path);
  const r = checkConsistency(pathway, labels);
  if (r.consistent) return null;
  return { pathway: pathway.id, steps: r.conflictingSteps, labels, ...(r.closest ? { closestPath: r.closest.path } : {}), issue: conflictIssue(pathway, labels, r) };
}

/**
 * Add a context conflict to the detector's report: a HIGH-severity reasoning hallucination
 * that AutoRepair receives through the report's issues and instructions like any other.
 * Deterministic code, no model call.
 */
export function withContextConflict(report: HdReport, pathway: Pathway, path: PathOutput): HdReport {
  const conflict = findContextConflict(pathway, path);
  if (!conflict) return report;
  const valid = pathway.paths.map(describePath).join(" | ");
  return {
    ...report,
    hallucinationDetected: true,
    severity: "HIGH",
    recommendation: report.hallucinationDetected ? report.recommendation : "revise: the path leaves the clinical pathway",
    issues: [...report.issues, conflict.issue],
    improvementInstructions: [
      ...report.improvementInstructions,
      `Make every step and the answer agree with one valid path of the "${pathway.id}" pathway (${conflict.steps.join(", ")} conflict). Valid paths: ${valid}`,
    ],
    contextConflict: conflict,
  };
}
