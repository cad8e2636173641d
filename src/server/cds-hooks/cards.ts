import type { DiagnosisResult } from "../../core/contracts/diagnosis-result.js";
import type { NotRead } from "./fhir-fetch.js";
import { CARD_SUMMARY_MAX, type Card } from "./hook-request.js";
import { cardIndicator, summariseAnswer } from "../view/answer-state.js";
import { cardUuidOfCase, OVERRIDE_REASONS } from "./card-feedback.js";
import { notReadOfResult } from "./prefetch-bundle.js";

const SOURCE = { label: "medmmv" } as const;

function clip(text: string, max: number): string {
  const one = text.replace(/\s+/g, " ").trim();
  return one.length <= max ? one : `${one.slice(0, max - 1).trimEnd()}…`;
}

/**
 * What part of the record was not read on this call (a prefetch query that failed or was
 * cut short), so the clinician knows the answer rests on less than the whole record.
 */
function notReadDetail(notRead: readonly NotRead[]): string | undefined {
  if (!notRead.length) return undefined;
  return `**Not read:** ${notRead.map((n) => n.said ?? `${n.key}${KEY_WORDS[n.key] ? ` — ${KEY_WORDS[n.key]}` : ""} (${n.reason})`).join("; ")}. The analysis uses the rest of the record.`;
}

/** What each prefetch key holds, in a clinician's words, so "Not read" says what is missing from the analysis. */
const KEY_WORDS: Record<string, string> = {
  conditions: "active problems",
  observations: "labs and vital signs",
  medicationStatements: "current medications",
  medicationRequests: "prescriptions",
  allergies: "allergies and intolerances",
};

/** Diagnoses of the differential the card lists (the audit view has them all). */
const CARD_DIFFERENTIAL = 3;

/**
 * The ranked differential in the card's detail: each diagnosis with the runs that named it
 * ("4 of 5 runs") and its best path's CU, so the clinician sees what else was considered and
 * how often. Nothing for a result stored before differentials existed.
 */
function differentialDetail(r: DiagnosisResult): string | undefined {
  const rows = (r.differential ?? []).slice(0, CARD_DIFFERENTIAL);
  if (!rows.length) return undefined;
  const line = (d: NonNullable<DiagnosisResult["differential"]>[number]) =>
    `${d.rank}. ${d.answer.option ? `(${d.answer.option}) ` : ""}${d.answer.text} — ${d.rollouts} of ${d.of} runs${d.bestCu !== null ? `, best path CU ${d.bestCu.toFixed(2)}` : ""}${d.code ? ` [${d.code.code}]` : ""}`;
  return `**Differential:**\n${rows.map(line).join("\n")}`;
}

/** The verified reply of an open-ended question, when one was composed (only supported statements are in it). */
function replyDetail(r: DiagnosisResult): string | undefined {
  return r.reply ? `**Reply:** ${r.reply.text}` : undefined;
}

/** The card of a finished case: the answer (or why there is none), how well it is supported, the audit view; `notRead` defaults to what the stored result says its record left unread. */
export function resultCard(r: DiagnosisResult, viewUrl: string, notRead: readonly NotRead[] = notReadOfResult(r.provenance.ignoredResources ?? [])): Card {
  const support = r.answerSupport;
  // The audit view's header state, by the same rule (answer-state.ts): only a confident answer is info.
  const answered = summariseAnswer(r, notRead);
  const indicator: Card["indicator"] = cardIndicator(answered.state);
  const summary =
    r.status === "completed" && r.answer
      ? `medmmv: ${r.answer.text}${support !== null ? ` (support ${Math.round(support * 100)}%)` : ""}`
      : r.status === "abstained"
        ? "medmmv abstained: no answer was well enough supported"
        : "medmmv could not analyse this record";
  const detail = [
    r.answer ? `**Answer:** ${r.answer.text}` : undefined,
    support !== null ? `**Support:** ${support.toFixed(2)} of the final reasoning paths' score` : undefined,
    r.abstentionReason ? `**Abstained:** ${r.abstentionReason}` : undefined,
    r.error ? `**Failed:** ${r.error.message}` : undefined,
    replyDetail(r) ?? (r.path ? `**Reasoning:** ${r.path.summary}` : undefined),
    differentialDetail(r),
    notReadDetail(notRead),
    answered.imageNote ? `**Images:** ${answered.imageNote}` : undefined,
    `_${r.disclaimer}_`,
  ].filter(Boolean);
  const uuid = cardUuidOfCase(r.caseId);
  return {
    // Feedback names the card by this uuid (the case's), and may give one of these reasons for an override.
    ...(uuid ? { uuid, overrideReasons: OVERRIDE_REASONS.map((r) => ({ ...r })) } : {}),
    summary: clip(summary, CARD_SUMMARY_MAX),
    indicator,
    detail: detail.join("\n\n"),
    source: SOURCE,
    links: [{ label: "Evidence and reasoning (audit view)", url: viewUrl, type: "absolute" }],
  };
}

/** The card of a case just started: the hook answers at once and links to where the result will be. */
export function startedCard(viewUrl: string, alreadyRunning: boolean, notRead: readonly NotRead[] = []): Card {
  return {
    summary: `${alreadyRunning ? "medmmv is still analysing this record" : "medmmv started analysing this record"}${notRead.length ? " (part of it could not be read)" : ""}`,
    indicator: notRead.length ? "warning" : "info",
    detail: [notReadDetail(notRead), "The result appears here on the next visit to this patient, and in the audit view (the link shows the analysis as it runs)."].filter(Boolean).join("\n\n"),
    source: SOURCE,
    links: [{ label: "Follow the analysis (audit view)", url: viewUrl, type: "absolute" }],
  };
}
