import { completeTrace, parseTrace, validateTrace } from "../stagewise/trace-parser.js";
import type { StageTrace } from "../stagewise/types.js";
import { asRecord, text } from "./common.js";

/**
 * ClinHallu's sample identity (reference §1.1 `get_sample_identifier`): `source_id:<id>`
 * when source_id is set, else `original_index:<n>`; `fallbackIndex` (the 0-based record
 * number) stands in for a missing original_index, as ClinHallu's question loader does.
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
  return typeof s["text"] === "string" ? s["text"].trim() : null;
};

/**
 * A `cot` / `gold_cot` object → stages. For gold records the stage objects are what
 * ClinHallu's later phases read; for a model's traces (`prefer: "raw"`) the raw text is
 * parsed by ClinHallu's rules, so this parser, not the producer's, decides the stages.
 * Either falls back to the other; null when the object has neither.
 */
export function traceFromCot(raw: unknown, prefer: "stages" | "raw" = "stages"): { stages: StageTrace; raw: string; validity: { valid: boolean; reason: string } } | null {
  const cot = asRecord(raw);
  if (cot === null) return null;
  const rawText = typeof cot["raw"] === "string" ? cot["raw"] : "";
  const v = stageText(cot, "visual_recognition");
  const k = stageText(cot, "knowledge_recall");
  const r = stageText(cot, "reasoning");
  if ((prefer === "raw" && rawText.trim() !== "") || (v === null && k === null && r === null)) {
    if (rawText === "") return null;
    const parsed = parseTrace(rawText);
    return { stages: completeTrace(parsed), raw: rawText, validity: validateTrace(parsed) };
  }
  const reasoning = asRecord(cot["reasoning"]);
  const answer = typeof reasoning?.["answer"] === "string" ? reasoning["answer"].trim() : "";
  const stages = { visual: v ?? "", knowledge: k ?? "", reasoning: r ?? "", answer };
  return { stages, raw: rawText, validity: storedValidity(stages) };
}

/** ClinHallu validity of stored stages (the rule of reference §1.2, applied to what the file holds). */
export function storedValidity(t: StageTrace): { valid: boolean; reason: string } {
  const present = (s: string) => (s.trim() === "" ? undefined : s.trim());
  return validateTrace({ visual: present(t.visual), knowledge: present(t.knowledge), reasoning: present(t.reasoning), answer: t.reasoning.trim() === "" ? undefined : t.answer });
}
