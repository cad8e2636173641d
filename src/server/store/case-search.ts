/**
 * Case search, backend-neutral: the columns a case's result is denormalised into when it is
 * saved (so a search reads narrow indexed columns, never result JSON), and the WHERE of a
 * search in either SQL dialect. Both stores index (tenant, created_at, id) and
 * (tenant, owner, created_at, id): a page is a backwards index range scan, newest first,
 * with the other filters checked on the rows it walks.
 */
import type { DiagnosisResult } from "../../core/contracts/diagnosis-result.js";
import { MedmmvError } from "../../core/contracts/errors.js";
import type { CaseSummary, ListCasesQuery, StoredCaseInput } from "./case-store.js";
import { decodeCursor, searchInstant, searchText } from "./store-rows.js";

/** Written by saveResult next to the result. Lists are stored as `|a|b|` so one substring test finds a whole item. */
export interface SearchColumns {
  finished_at: string | null;
  answer_option: string | null;
  answer_text: string | null;
  abstained: number;
  unsupported_claims: number;
  hallucinations: number;
  answer_support: number | null;
  models: string;
  prompt_hashes: string;
  /** Agents the provider's content filter stopped or the model refused (answer-state.ts: the case is incomplete). */
  stopped_agents: number;
}

const listColumn = (items: Iterable<string>): string => {
  const unique = [...new Set([...items].filter((s) => s && !s.includes("|")))].sort();
  return unique.length ? `|${unique.join("|")}|` : "";
};

export function searchColumns(result: DiagnosisResult): SearchColumns {
  const claims = (result.path?.steps ?? []).flatMap((s) => s.claims);
  return {
    finished_at: result.provenance?.finishedAt ?? null,
    answer_option: result.answer?.option ?? null,
    answer_text: result.answer?.text ?? null,
    abstained: result.status === "abstained" ? 1 : 0,
    // A claim the detector did not find supported (unsupported or contradicted) is one a reviewer looks at.
    unsupported_claims: claims.filter((c) => c.verdict !== undefined && c.verdict !== "supported").length,
    hallucinations: result.hallucinations.length,
    answer_support: result.answerSupport,
    models: listColumn(Object.values(result.provenance?.models ?? {})),
    prompt_hashes: listColumn(Object.values(result.provenance?.prompts ?? {})),
    stopped_agents: (result.provenance?.failures ?? []).filter((f) => f.code === "CONTENT_FILTERED" || f.code === "MODEL_REFUSED").length,
  };
}
export const SEARCH_COLUMN_NAMES = ["finished_at", "answer_option", "answer_text", "abstained", "unsupported_claims", "hallucinations", "answer_support", "models", "prompt_hashes", "stopped_agents"] as const;
export const searchColumnValues = (c: SearchColumns): unknown[] => SEARCH_COLUMN_NAMES.map((n) => c[n]);

/** The pathway a case names (a registry id, or an inline pathway's id), for search. */
export function pathwayOf(input: StoredCaseInput): string | null {
  const p = (input as { pathway?: unknown }).pathway;
  if (typeof p === "string") return p;
  if (p && typeof p === "object" && typeof (p as { id?: unknown }).id === "string") return (p as { id: string }).id;
  return null;
}

/** What differs between the dialects in a search. */
export interface SearchDialect {
  /** A placeholder for the value (it is bound). */
  param(value: unknown): string;
  /** A placeholder for an ISO instant compared with created_at. */
  instant(value: string): string;
  /** `column` contains `needle` as a substring. */
  contains(column: string, needle: string): string;
}

export function caseSearchWhere(q: ListCasesQuery, d: SearchDialect): string {
  if (q.tenant === undefined && q.owner === undefined) throw new MedmmvError("INTERNAL", "a case search needs a tenant or an owner");
  const w: string[] = [];
  if (q.tenant !== undefined) w.push(`tenant = ${d.param(q.tenant)}`);
  if (q.owner !== undefined) w.push(`owner = ${d.param(q.owner)}`);
  if (q.status) w.push(`status = ${d.param(q.status)}`);
  if (q.from) w.push(`created_at >= ${d.instant(searchInstant("from", q.from))}`);
  if (q.to) w.push(`created_at < ${d.instant(searchInstant("to", q.to))}`);
  if (q.answer !== undefined) {
    const answer = searchText("answer", q.answer);
    w.push(`(answer_option = ${d.param(answer)} OR lower(answer_text) = lower(${d.param(answer)}))`);
  }
  if (q.abstained !== undefined) w.push(`abstained = ${d.param(q.abstained ? 1 : 0)}`);
  if (q.minUnsupportedClaims !== undefined) {
    if (!Number.isSafeInteger(q.minUnsupportedClaims) || q.minUnsupportedClaims < 0) throw new MedmmvError("INVALID_INPUT", "minUnsupportedClaims must be a whole number from 0");
    w.push(`unsupported_claims >= ${d.param(q.minUnsupportedClaims)}`);
  }
  if (q.model !== undefined) w.push(d.contains("models", `|${searchText("model", q.model)}|`));
  if (q.promptHash !== undefined) w.push(d.contains("prompt_hashes", `|${searchText("promptHash", q.promptHash).toLowerCase()}|`));
  if (q.pathway !== undefined) w.push(`pathway = ${d.param(searchText("pathway", q.pathway))}`);
  if (q.submittedBy !== undefined) w.push(`submitted_by = ${d.param(searchText("submittedBy", q.submittedBy))}`);
  // Cases finished before the column existed have it NULL: neither filter lists them.
  if (q.filteredOrRefused !== undefined) w.push(q.filteredOrRefused ? "stopped_agents > 0" : "stopped_agents = 0");
  if (q.feedback !== undefined) w.push(`feedback = ${d.param(searchText("feedback", q.feedback))}`);
  if (q.cursor) {
    const after = decodeCursor(q.cursor);
    w.push(`(created_at, id) < (${d.instant(after.createdAt)}, ${d.param(after.id)})`);
  }
  return w.join(" AND ");
}

export const SUMMARY_SELECT = "id, status, answer_option, answer_text, created_at, updated_at, finished_at, answer_support, abstained, unsupported_claims, hallucinations, models, pathway, submitted_by, stopped_agents, feedback";

export interface SearchRow {
  id: string;
  status: string;
  answer_option: string | null;
  answer_text: string | null;
  created_at: string;
  updated_at: string;
  finished_at: string | null;
  answer_support: number | null;
  abstained: number | null;
  unsupported_claims: number | null;
  hallucinations: number | null;
  models: string | null;
  pathway: string | null;
  submitted_by: string;
  stopped_agents: number | null;
  feedback: string | null;
}

export function summaryFromSearchRow(r: SearchRow): CaseSummary {
  const finished = r.finished_at !== null;
  return {
    id: r.id,
    status: r.status as CaseSummary["status"],
    answer: r.answer_text === null ? null : { option: r.answer_option, text: r.answer_text },
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    finishedAt: r.finished_at,
    answerSupport: r.answer_support === null ? null : Number(r.answer_support),
    abstained: finished ? Number(r.abstained) === 1 : null,
    unsupportedClaims: finished ? Number(r.unsupported_claims) : null,
    hallucinations: finished ? Number(r.hallucinations) : null,
    models: (r.models ?? "").split("|").filter(Boolean),
    pathway: r.pathway,
    submittedBy: r.submitted_by,
    filteredOrRefused: finished && r.stopped_agents !== null ? Number(r.stopped_agents) > 0 : null,
    feedback: (r.feedback ?? null) as CaseSummary["feedback"],
  };
}
