/**
 * How sure a result is, in words: the one rule the audit view's header and the CDS card's
 * indicator both read (docs/api.md#how-sure-confident-uncertain-incomplete).
 *
 * - **incomplete**: part of the case was not examined: the analysis failed; an agent was
 *   stopped by the provider's content filter or refused by the model; an agent that reads the
 *   images or the notes failed, so an image or the notes were not read; ImageDoctor's model takes
 *   no images (provenance.imageInput), so no model read them; or (a CDS call) part of
 *   the record could not be read. Images a text-only model saw as the vision model's description
 *   were read (by that model): not incomplete, but the summary's imageNote says so.
 * - **uncertain**: everything was examined, but the answer is weak: no answer (abstained);
 *   the answer won at most half of the runs (the differential's first entry when the
 *   result has one, else the rollouts whose answer has the selected answer's key); under half of the final paths' score is behind it
 *   (answerSupport < 0.5); a claim of the selected path is unsupported or contradicted by the
 *   evidence; a detected hallucination was left unresolved; or the case's budget cut repairs short.
 * - **confident**: none of the above.
 */
import type { DiagnosisResult } from "../../core/contracts/diagnosis-result.js";
import type { PathOutput } from "../../core/contracts/reasoning-path.js";
import { answerKey } from "../../core/workflow/nodes/plan-refinement.js";
import type { AnswerState, AnswerSummary, NotExamined } from "./answer-summary.js";
import { notReadOfResult } from "../cds-hooks/prefetch-bundle.js";

export type { AnswerState, AnswerSummary, NotExamined } from "./answer-summary.js";

/** Below this share of the final paths' score behind the answer it is uncertain. */
export const WEAK_SUPPORT = 0.5;

/** The part of a CDS Hooks call's record that was not read (fhir-fetch.ts NotRead). */
export interface RecordNotRead {
  key: string;
  reason: string;
}

const STOPPED: Record<string, string> = { CONTENT_FILTERED: "content filter", MODEL_REFUSED: "model refused" };
/** What an agent reads. A failed ImageDoctor or TextDoctor leaves the image or the notes unread; a failed search is one source fewer, unless it was stopped. */
const WHAT_AN_AGENT_READS: Record<string, string> = { "image-doctor": "the image", "text-doctor": "the notes" };
const WHAT_ELSE: Record<string, string> = { "web-search": "the literature" };

/**
 * The runs behind the answer: the differential's first cluster (answers compared by meaning),
 * else, for results stored before the differential existed, the rollouts with the answer's key.
 */
function runsBehind(r: DiagnosisResult): AnswerSummary["runs"] {
  const top = r.differential?.[0];
  if (top && top.of > 0) return { chose: top.rollouts, of: top.of };
  if (!r.answer || r.stability.rolloutAnswers.length === 0) return null;
  // The same key select-path gives a rollout's answer (answerSupport is computed by it): only the answer is read.
  const key = answerKey({ answer: r.answer } as PathOutput);
  return { chose: r.stability.rolloutAnswers.filter((a) => a === key).length, of: r.stability.rolloutAnswers.length };
}

function notExamined(r: DiagnosisResult): NotExamined[] {
  const out: NotExamined[] = [];
  for (const f of r.provenance.failures ?? []) {
    const agent = f.branch.startsWith("web-search") ? "web-search" : f.branch;
    const what = WHAT_AN_AGENT_READS[agent];
    // A failed rollout or repair is one path fewer, not an unread part of the case; a stopped one is still said.
    if (!what && !STOPPED[f.code]) continue;
    const entry = { agent, what: what ?? WHAT_ELSE[agent] ?? `the reasoning of ${f.branch}`, why: STOPPED[f.code] ?? f.code };
    if (!out.some((o) => o.what === entry.what && o.why === entry.why)) out.push(entry);
  }
  // Images no model read because ImageDoctor's model (and so, with no model to describe them, every model) takes none.
  const input = r.provenance.imageInput;
  const unread = input?.models.some((m) => m.saw === "nothing" && (m.role === "vision" || (m.role === "executor" && input.describedBy === null)));
  if (input && unread) {
    const why = input.models.every((m) => m.saw === "nothing") ? "no model of this deployment takes images" : "ImageDoctor's model takes no images";
    if (!out.some((o) => o.what === "the image")) out.push({ agent: "image-doctor", what: "the image", why });
  }
  return out;
}

/** The answer's models that saw the vision model's description of the images instead of the images, in words; null when none did. */
function imageNoteOf(r: DiagnosisResult): string | null {
  const input = r.provenance.imageInput;
  const described = [...new Set((input?.models ?? []).filter((m) => m.role === "executor" && m.saw === "description").map((m) => m.model))];
  if (!input?.describedBy || described.length === 0) return null;
  return `the answer's ${described.length === 1 ? "model" : "models"} (${described.join(", ")}) saw a description of the images made by ${input.describedBy}, not the images`;
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** The state of a result, and why (the CDS card adds what the EHR's record left unread). */
export function summariseAnswer(r: DiagnosisResult, recordNotRead: readonly RecordNotRead[] = notReadOfResult(r.provenance.ignoredResources ?? [])): AnswerSummary {
  const claims = { supported: 0, unsupported: 0, rejected: 0 };
  for (const c of (r.path?.steps ?? []).flatMap((s) => s.claims)) {
    if (c.verdict === "supported") claims.supported++;
    else if (c.verdict === "contradicted") claims.rejected++;
    else claims.unsupported++;
  }
  const runs = runsBehind(r);
  const missing = notExamined(r);
  const incomplete = [
    ...(r.status === "failed" ? [`the analysis failed${r.error ? ` (${r.error.code})` : ""}`] : []),
    ...missing.map((m) => `${m.what} was not examined (${m.why})`),
    ...(recordNotRead.length ? [`part of the record was not read (${recordNotRead.map((n) => n.key).join(", ")})`] : []),
  ];
  const uncertain = [
    ...(r.status === "abstained" ? ["no answer was well enough supported (abstained)"] : []),
    ...(runs && runs.chose * 2 <= runs.of ? [`only ${runs.chose} of ${runs.of} runs chose this answer`] : []),
    ...(r.status === "completed" && r.answerSupport !== null && r.answerSupport < WEAK_SUPPORT ? [`under half of the final paths' score is behind it (${r.answerSupport.toFixed(2)})`] : []),
    ...(r.status === "completed" && r.answerSupport === null ? ["no score is behind the answer"] : []),
    ...(claims.unsupported ? [`${plural(claims.unsupported, "claim")} of the selected path ${claims.unsupported === 1 ? "is" : "are"} not supported by the evidence`] : []),
    ...(claims.rejected ? [`${plural(claims.rejected, "claim")} of the selected path ${claims.rejected === 1 ? "is" : "are"} contradicted by the evidence`] : []),
    ...(r.hallucinations.some((x) => !x.resolved) ? [`${plural(r.hallucinations.filter((x) => !x.resolved).length, "detected hallucination")} left unresolved`] : []),
    ...(r.budgetExhausted ? ["the case's budget ran out before every repair was made"] : []),
  ];
  const state: AnswerState = incomplete.length ? "incomplete" : uncertain.length ? "uncertain" : "confident";
  return {
    state,
    reasons: [...incomplete, ...uncertain],
    answer: r.answer ? `${r.answer.option ? `(${r.answer.option}) ` : ""}${r.answer.text}` : null,
    runs,
    claims,
    notExamined: missing,
    imageNote: imageNoteOf(r),
  };
}

/** The CDS card's indicator for a state: advice the clinician can lean on is info, anything less a warning. */
export function cardIndicator(state: AnswerState): "info" | "warning" {
  return state === "confident" ? "info" : "warning";
}
