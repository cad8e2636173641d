import { STAGE_NAMES } from "../agents/stage-judge.js";
import { PY_WHITESPACE, pyStrip, pyWordCount } from "./python-text.js";
import { STAGES, type StageKey, type StageTrace } from "./types.js";

/** ClinHallu's literal, case-sensitive stage headers. */
export const STAGE_HEADERS = Object.fromEntries(STAGES.map((s) => [s, `[${STAGE_NAMES[s]}]`])) as Record<StageKey, string>;
/** A header as a literal in a pattern: only its brackets need escaping. */
const headerPattern = (h: string) => h.replace(/[[\]]/g, "\\$&");
const HEADER_RE = new RegExp(STAGES.map((s) => headerPattern(STAGE_HEADERS[s])).join("|"), "g");
const BY_HEADER = new Map<string, StageKey>(STAGES.map((s) => [STAGE_HEADERS[s], s]));
const AFTER_HEADER = new RegExp(`^[${PY_WHITESPACE}]*`);

/**
 * ClinHallu's answer pattern, `\[Answer\]\s*(.+?)$` under re.MULTILINE, in JavaScript terms:
 * the whitespace after the tag may span lines (so `[Answer]\nC. …` answers "C. …"), the
 * answer is the rest of the first non-blank line, and Python's `.` and `$` break only at
 * `\n` (so a CRLF line keeps its `\r` until the answer is stripped). A bare `[Answer]` with
 * nothing after it does not match at all and stays in the text.
 */
const ANSWER_SOURCE = `\\[Answer\\][${PY_WHITESPACE}]*([^\\n]+?)(?=\\n|$)`;
const ANSWER_FIRST = new RegExp(ANSWER_SOURCE);
const ANSWER_ALL = new RegExp(ANSWER_SOURCE, "g");

/**
 * Parsed stages; a stage the text lacks is absent. A present stage may be "" — the reasoning
 * stage when it held nothing but its answer line — which ClinHallu reports as too short,
 * not as missing.
 */
export type ParsedTrace = Partial<Record<StageKey, string>> & { answer?: string };

/**
 * Split a trace as ClinHallu's `parse_cot` does: each stage runs from its header to the next
 * header; text before the first header is ignored; a stage whose text is empty is skipped
 * (so an empty repeat does not erase an earlier one, and a non-empty repeat overwrites it);
 * markdown around a header (`**[Reasoning]**`) still matches and its asterisks stay in the
 * text. In the reasoning stage the answer is the first `[Answer]` match and every match —
 * tag, the whitespace after it and the answer line — is removed from the reasoning text.
 * No header at all → null. docs/evaluation.md#clinhallu-reference-fidelity lists every case.
 */
export function parseTrace(text: string): ParsedTrace | null {
  const hits = [...text.matchAll(HEADER_RE)];
  if (hits.length === 0) return null;
  const out: ParsedTrace = {};
  hits.forEach((m, i) => {
    const start = m.index + m[0].length;
    const end = i + 1 < hits.length ? hits[i + 1]!.index : text.length;
    const content = pyStrip(text.slice(start, end).replace(AFTER_HEADER, ""));
    if (content === "") return;
    const stage = BY_HEADER.get(m[0])!;
    if (stage === "reasoning") {
      out.reasoning = pyStrip(content.replace(ANSWER_ALL, ""));
      out.answer = pyStrip(ANSWER_FIRST.exec(content)?.[1] ?? "");
    } else out[stage] = content;
  });
  // Headers with nothing under any of them parse to nothing at all, as in ClinHallu.
  return Object.keys(out).length ? out : null;
}

/**
 * ClinHallu's `validate_cot`: stage by stage in V, K, R order, a missing stage or one of
 * fewer than 3 words (Python's `split()`) is the reason; then the reasoning must have an answer.
 */
export function validateTrace(t: ParsedTrace | null): { valid: boolean; reason: string } {
  if (t === null) return { valid: false, reason: "Parsing returned None" };
  for (const s of STAGES) {
    const stage = t[s];
    if (stage === undefined) return { valid: false, reason: `Missing required step: ${STAGE_HEADERS[s]}` };
    if (pyWordCount(stage) < 3) return { valid: false, reason: `Step ${STAGE_HEADERS[s]} has insufficient text (< 3 words)` };
  }
  if (!t.answer) return { valid: false, reason: "Reasoning step has no [Answer]" };
  return { valid: true, reason: "OK" };
}

/** Missing stages become "" (ClinHallu writes `{"text": ""}` for them). */
export function completeTrace(t: ParsedTrace | null): StageTrace {
  return { visual: t?.visual ?? "", knowledge: t?.knowledge ?? "", reasoning: t?.reasoning ?? "", answer: t?.answer ?? "" };
}

/** A trace in ClinHallu's header format (empty stages dropped), e.g. for export or a replacement prefix. */
export function renderTrace(t: Partial<StageTrace>, opts: { answer?: boolean } = {}): string {
  const blocks = STAGES.filter((s) => pyStrip(t[s] ?? "") !== "").map((s) => `${STAGE_HEADERS[s]}\n${pyStrip(t[s]!)}`);
  let out = blocks.join("\n\n");
  if (opts.answer !== false && t.answer) out += `${out ? "\n" : ""}[Answer] ${t.answer}`;
  return out;
}

/**
 * Validity of a trace held as stage fields (structured output, or a file's stage objects)
 * by the same rule: `present` says which stages exist; by default a stage exists when its
 * text is not blank, and the reasoning stage carries the answer.
 */
export function validateStages(t: StageTrace, present: (s: StageKey) => boolean = (s) => pyStrip(t[s]) !== ""): { valid: boolean; reason: string } {
  const parsed: ParsedTrace = {};
  for (const s of STAGES) if (present(s)) parsed[s] = pyStrip(t[s]);
  if (parsed.reasoning !== undefined) parsed.answer = pyStrip(t.answer);
  return validateTrace(parsed);
}
