/**
 * The access trail in an auditor's words: who (the key, the EHR user, the view link and who
 * made it), what, and the outcome, for the audit view, the auditor pages and their CSV export.
 */
import type { AccessActor, AccessEvent } from "../store/case-store.js";
import { feedbackText } from "../cds-hooks/card-feedback.js";

export function actorText(a: AccessActor): string {
  switch (a.type) {
    case "ehr":
      return `EHR ${a.id}${a.sub ? ` user ${a.sub}` : ""}`;
    case "link":
      // Auditor links' ids start a- (auditor-pages.ts), view links' l- (auth.ts).
      return `${a.id.startsWith("a-") ? "auditor link" : "view link"} ${a.id} (made by ${a.sub ?? "?"})`;
    case "system":
      return "medmmv";
    default:
      return `key ${a.id}`;
  }
}

const ACTIONS: Record<string, string> = {
  create: "submitted the case",
  read: "read the case",
  events: "followed its events",
  graph: "read its evidence graph",
  export: "exported its evidence graph",
  fhir: "read its FHIR result",
  turns: "asked about it",
  view: "opened the audit view",
  "view-link": "made a view link",
  delete: "deleted the case",
  purge: "purged the case (retention)",
  search: "searched cases",
  "audit-read": "read the access trail",
  "audit-page": "opened an auditor page",
  "audit-link": "made an auditor link",
  feedback: "sent CDS card feedback",
};

/** What the event did, in words, with what an auditor needs of its detail (a search's filters, a feedback's outcome). */
export function actionText(e: Pick<AccessEvent, "action" | "detail">): string {
  const base = ACTIONS[e.action] ?? e.action;
  const d = e.detail;
  if (e.action === "feedback") return `${base}: ${feedbackText(d)}`;
  if (e.action === "search" && typeof d.filters === "string") return `${base}${d.filters ? ` (${d.filters})` : " (no filter)"}, ${d.results ?? 0} found`;
  if (e.action === "view" && typeof d.openedBy === "string") return `${base} (opened by ${d.openedBy})`;
  return base;
}

export function outcomeText(e: Pick<AccessEvent, "outcome" | "detail">): string {
  return e.outcome === "success" ? "success" : `${e.outcome}${typeof e.detail.status === "number" ? ` (HTTP ${e.detail.status})` : ""}`;
}

/** One trail row as the pages and the CSV show it. */
export interface TrailRow {
  at: string;
  who: string;
  what: string;
  caseId: string;
  from: string;
  outcome: string;
  requestId: string;
}

export function trailRow(e: AccessEvent): TrailRow {
  return { at: e.at, who: actorText(e.actor), what: actionText(e), caseId: e.caseId ?? "", from: e.client ?? "", outcome: outcomeText(e), requestId: e.requestId ?? "" };
}

const CSV_COLUMNS: Array<[keyof TrailRow, string]> = [
  ["at", "when"],
  ["who", "who"],
  ["what", "what"],
  ["caseId", "case"],
  ["from", "from"],
  ["outcome", "outcome"],
  ["requestId", "request id"],
];

/** RFC 4180 CSV; a cell a spreadsheet would run as a formula (=, +, -, @) is prefixed with ' (OWASP CSV injection). */
function csvCell(v: string): string {
  const safe = /^[=+\-@\t\r]/.test(v) ? `'${v}` : v;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

export function trailCsv(rows: readonly TrailRow[]): string {
  return [CSV_COLUMNS.map(([, h]) => h), ...rows.map((r) => CSV_COLUMNS.map(([k]) => r[k]))].map((cells) => cells.map(csvCell).join(",")).join("\r\n") + "\r\n";
}
