import { MedmmvError } from "../../core/contracts/errors.js";
import type { ExternalTrace } from "../stagewise/types.js";
import { clinhalluFallbackIndex, clinhalluSampleId, traceFromCot } from "./clinhallu-records.js";
import { asRecord, readRecords } from "./common.js";

/**
 * ClinHallu `model_cot.jsonl`: traces another system produced, keyed by sample id, so
 * `--traces` can judge them. A record without a `cot` (ClinHallu's
 * `api_failed`) is an invalid, empty trace: excluded from accuracy, every stage counted
 * hallucinated. Validity is recomputed by ClinHallu's rule rather than trusted from
 * `cot_valid`, so a hand-edited file cannot claim a trace valid that is not.
 */
export async function readClinhalluTraces(file: string): Promise<{ traces: Map<string, ExternalTrace>; unreadable: number }> {
  try {
    return await read(file);
  } catch (err) {
    if (err instanceof MedmmvError && err.code === "INVALID_INPUT") throw new MedmmvError("INVALID_INPUT", `--traces: ${err.message.replace(/; check --input$/, "")}`, { cause: err });
    throw err;
  }
}

async function read(file: string): Promise<{ traces: Map<string, ExternalTrace>; unreadable: number }> {
  const traces = new Map<string, ExternalTrace>();
  let unreadable = 0;
  for await (const rec of readRecords(file)) {
    const r = "parseError" in rec ? null : asRecord(rec.value);
    if (r === null) {
      unreadable++;
      continue;
    }
    const { id } = clinhalluSampleId(r, clinhalluFallbackIndex(rec));
    const t = traceFromCot(r["cot"]);
    const stages = t?.stages ?? { visual: "", knowledge: "", reasoning: "", answer: "" };
    const check = t ? t.validity : { valid: false, reason: typeof r["generation_status"] === "string" ? `no trace (${r["generation_status"]})` : "no trace" };
    traces.set(id, { stages, raw: t?.raw ?? "", valid: check.valid, validation: check.reason });
  }
  if (traces.size === 0) throw new MedmmvError("INVALID_INPUT", `--traces ${file} holds no readable model_cot.jsonl record`);
  return { traces, unreadable };
}
