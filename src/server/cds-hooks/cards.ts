import type { DiagnosisResult } from "../../core/contracts/diagnosis-result.js";
import type { Card } from "./hook-request.js";

const SOURCE = { label: "medmmv" } as const;

/** Below this share of the final paths' support the answer is shown as a warning. */
const WEAK_SUPPORT = 0.5;

function clip(text: string, max: number): string {
  const one = text.replace(/\s+/g, " ").trim();
  return one.length <= max ? one : `${one.slice(0, max - 1).trimEnd()}…`;
}

/** The card of a finished case: the answer (or why there is none), how well it is supported, the audit view. */
export function resultCard(r: DiagnosisResult, viewUrl: string): Card {
  const support = r.answerSupport;
  const indicator: Card["indicator"] = r.status === "completed" && support !== null && support >= WEAK_SUPPORT ? "info" : "warning";
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
    `_${r.disclaimer}_`,
  ].filter(Boolean);
  return {
    summary: clip(summary, 140),
    indicator,
    detail: detail.join("\n\n"),
    source: SOURCE,
    links: [{ label: "Evidence and reasoning (audit view)", url: viewUrl, type: "absolute" }],
  };
}

/** The card of a case just started: the hook answers at once and links to where the result will be. */
export function startedCard(viewUrl: string, alreadyRunning: boolean): Card {
  return {
    summary: alreadyRunning ? "medmmv is still analysing this record" : "medmmv started analysing this record",
    indicator: "info",
    detail: "The result appears here on the next visit to this patient, and in the audit view as soon as it is ready.",
    source: SOURCE,
    links: [{ label: "Follow the analysis (audit view)", url: viewUrl, type: "absolute" }],
  };
}

/** No record to analyse; `reason` says why (nothing prefetched, a server not allowed, empty searches). */
export function noRecordCard(reason: string): Card {
  return { summary: "medmmv: no patient record to analyse", indicator: "info", detail: reason, source: SOURCE };
}
