import { STAGE_NAMES } from "../agents/stage-judge.js";
import { escapeRegExp } from "../../core/pathways/labeller.js";
import { STAGES, type StageKey, type StageTrace } from "./types.js";

/** ClinHallu's literal, case-sensitive stage headers (reference §1.2). */
export const STAGE_HEADERS = Object.fromEntries(STAGES.map((s) => [s, `[${STAGE_NAMES[s]}]`])) as Record<StageKey, string>;
const HEADER_RE = new RegExp(STAGES.map((s) => escapeRegExp(STAGE_HEADERS[s])).join("|"), "g");
const BY_HEADER = new Map<string, StageKey>(STAGES.map((s) => [STAGE_HEADERS[s], s]));

/** Parsed stages; a stage the text lacks is absent. */
export type ParsedTrace = Partial<Record<StageKey, string>> & { answer?: string };

/**
 * Split a trace by ClinHallu's rules: each stage runs from its header to the next header;
 * text before the first header is ignored; an empty stage counts as absent; a repeated
 * header overwrites the earlier one; markdown around a header (`**[Reasoning]**`) still
 * matches and its asterisks stay in the text, as in ClinHallu. The answer is the first
 * `[Answer]` of the reasoning stage (possibly on the next line), and every `[Answer]` line
 * is removed from the reasoning text. No header at all → null.
 */
export function parseTrace(text: string): ParsedTrace | null {
  const hits = [...text.matchAll(HEADER_RE)];
  if (hits.length === 0) return null;
  const out: ParsedTrace = {};
  hits.forEach((m, i) => {
    const start = m.index + m[0].length;
    const end = i + 1 < hits.length ? hits[i + 1]!.index : text.length;
    const content = text.slice(start, end).trim();
    if (content !== "") out[BY_HEADER.get(m[0])!] = content;
  });
  if (out.reasoning !== undefined) {
    const segment = out.reasoning;
    out.answer = /\[Answer\]\s*([^\n]*)/.exec(segment)?.[1]?.trim() ?? "";
    out.reasoning = segment.replace(/\[Answer\][^\n]*/g, "").trim();
    if (out.reasoning === "") delete out.reasoning;
  }
  return out;
}

const words = (s: string) => s.split(/\s+/).filter(Boolean).length;

/** ClinHallu's validity rule: all three stages, each ≥ 3 words, a non-empty answer; the reason string as theirs. */
export function validateTrace(t: ParsedTrace | null): { valid: boolean; reason: string } {
  if (t === null) return { valid: false, reason: "Parsing returned None" };
  for (const s of STAGES) if (t[s] === undefined) return { valid: false, reason: `Missing required step: ${STAGE_HEADERS[s]}` };
  for (const s of STAGES) if (words(t[s]!) < 3) return { valid: false, reason: `Step ${STAGE_HEADERS[s]} has insufficient text (< 3 words)` };
  if (!t.answer) return { valid: false, reason: "Reasoning step has no [Answer]" };
  return { valid: true, reason: "OK" };
}

/** Missing stages become "" (ClinHallu writes `{"text": ""}` for them). */
export function completeTrace(t: ParsedTrace | null): StageTrace {
  return { visual: t?.visual ?? "", knowledge: t?.knowledge ?? "", reasoning: t?.reasoning ?? "", answer: t?.answer ?? "" };
}

/** A trace in ClinHallu's header format (empty stages dropped), e.g. for export or a replacement prefix. */
export function renderTrace(t: Partial<StageTrace>, opts: { answer?: boolean } = {}): string {
  const blocks = STAGES.filter((s) => (t[s] ?? "").trim() !== "").map((s) => `${STAGE_HEADERS[s]}\n${t[s]!.trim()}`);
  let out = blocks.join("\n\n");
  if (opts.answer !== false && t.answer) out += `${out ? "\n" : ""}[Answer] ${t.answer}`;
  return out;
}

/** Validity of a stage trace built from structured output, by the same rule as a parsed one. */
export function validateStages(t: StageTrace): { valid: boolean; reason: string } {
  const parsed: ParsedTrace = {};
  for (const s of STAGES) if (t[s].trim() !== "") parsed[s] = t[s].trim();
  if (parsed.reasoning !== undefined) parsed.answer = t.answer.trim();
  return validateTrace(parsed);
}
