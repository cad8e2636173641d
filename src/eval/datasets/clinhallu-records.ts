import { pyStrip } from "../stagewise/python-text.js";
import { completeTrace, parseTrace, validateStages, validateTrace } from "../stagewise/trace-parser.js";
import type { StageTrace } from "../stagewise/types.js";
import { asRecord, text, type RawRecord } from "./common.js";

/**
 * What stands in for a missing original_index: ClinHallu's question loader uses the line
 * number − 1 (blank lines counted), a JSON array file the position in the array.
 */
export function clinhalluFallbackIndex(rec: RawRecord): number {
  return rec.line !== null ? rec.line - 1 : rec.index;
}

/**
 * ClinHallu's sample identity (`get_sample_identifier`): `source_id:<id>` when source_id is
 * set, else `original_index:<n>`; `fallbackIndex` (clinhalluFallbackIndex) stands in for a
 * missing original_index, as ClinHallu's question loader does.
 */
export function clinhalluSampleId(r: Record<string, unknown>, fallbackIndex: number): { id: string; defaulted: boolean } {
  const sourceId = text(r["source_id"]);
  if (sourceId !== null) return { id: `source_id:${sourceId}`, defaulted: false };
  const oi = r["original_index"];
  if (typeof oi === "number" && Number.isInteger(oi)) return { id: `original_index:${oi}`, defaulted: false };
  if (typeof oi === "string" && /^\d+$/.test(oi.trim())) return { id: `original_index:${Number(oi)}`, defaulted: false };
  return { id: `original_index:${fallbackIndex}`, defaulted: true };
}

const stageText = (cot: Record<string, unknown>, key: string): string | null => {
  const s = asRecord(cot[key]);
  if (s === null) return null;
  return typeof s["text"] === "string" ? pyStrip(s["text"]) : null;
};

/**
 * A `cot` / `gold_cot` object → stages. The stage objects are what ClinHallu's later phases
 * read (`extract_step_text`, `extract_answer`), so they are read first for gold and model
 * traces alike; `raw` is parsed by ClinHallu's rules only when the object has no stage
 * objects. (A structured trace's `raw` is a rendering of its stages, and a stage that itself
 * contains a header or `[Answer]` would re-parse differently.) Null when the object has neither.
 */
export function traceFromCot(raw: unknown): { stages: StageTrace; raw: string; validity: { valid: boolean; reason: string } } | null {
  const cot = asRecord(raw);
  if (cot === null) return null;
  const rawText = typeof cot["raw"] === "string" ? cot["raw"] : "";
  const v = stageText(cot, "visual_recognition");
  const k = stageText(cot, "knowledge_recall");
  const r = stageText(cot, "reasoning");
  if (v === null && k === null && r === null) {
    if (rawText === "") return null;
    const parsed = parseTrace(rawText);
    return { stages: completeTrace(parsed), raw: rawText, validity: validateTrace(parsed) };
  }
  const reasoning = asRecord(cot["reasoning"]);
  const answer = typeof reasoning?.["answer"] === "string" ? pyStrip(reasoning["answer"]) : "";
  const stages = { visual: v ?? "", knowledge: k ?? "", reasoning: r ?? "", answer };
  return { stages, raw: rawText, validity: storedValidity(stages) };
}

/**
 * ClinHallu validity of stored stages: a stage is there when it has text; the reasoning
 * stage also when it holds only its answer (ClinHallu keeps such a stage, with empty text,
 * and calls it too short rather than missing).
 */
export function storedValidity(t: StageTrace): { valid: boolean; reason: string } {
  return validateStages(t, (s) => pyStrip(t[s]) !== "" || (s === "reasoning" && pyStrip(t.answer) !== ""));
}
