import type { DiagnosisResult } from "../../core/contracts/diagnosis-result.js";
import type { NotRead } from "./fhir-fetch.js";
import { CARD_SUMMARY_MAX, type Card } from "./hook-request.js";

const SOURCE = { label: "medmmv" } as const;

/** Below this share of the final paths' support the answer is shown as a warning. */
const WEAK_SUPPORT = 0.5;

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

/** The card of a finished case: the answer (or why there is none), how well it is supported, the audit view. */
export function resultCard(r: DiagnosisResult, viewUrl: string, notRead: readonly NotRead[] = []): Card {
  const support = r.answerSupport;
  const indicator: Card["indicator"] = r.status === "completed" && support !== null && support >= WEAK_SUPPORT && !notRead.length ? "info" : "warning";
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
    r.path ? `**Reasoning:** ${r.path.summary}` : undefined,
    notReadDetail(notRead),
    `_${r.disclaimer}_`,
  ].filter(Boolean);
  return {
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
