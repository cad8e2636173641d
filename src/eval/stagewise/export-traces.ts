import { mkdir, open } from "node:fs/promises";
import path from "node:path";
import { MedmmvError } from "../../core/contracts/errors.js";
import { clinhalluFallbackIndex, clinhalluSampleId } from "../datasets/clinhallu-records.js";
import { asRecord, ReadContext, readRecords } from "../datasets/common.js";
import { readManifest } from "../manifest.js";
import { readResults, RESULTS_FILE } from "../results-file.js";
import type { JudgedTrace, ReplacementKey } from "./types.js";

/** ClinHallu's file and mode names for the replacement settings (reference §1.4). */
const REPLACE_FILES: Record<ReplacementKey, { key: string; replaced: string[]; preserved?: string[] }> = {
  V: { key: "replace_vr", replaced: ["visual_recognition"] },
  K: { key: "replace_kr", replaced: ["knowledge_recall"], preserved: ["visual_recognition"] },
  VK: { key: "replace_vr_kr", replaced: ["visual_recognition", "knowledge_recall"] },
};

function cotOf(t: JudgedTrace) {
  return {
    raw: t.raw,
    visual_recognition: { text: t.stages.visual },
    knowledge_recall: { text: t.stages.knowledge },
    reasoning: { text: t.stages.reasoning, answer: t.stages.answer },
  };
}

/**
 * The identifier fields ClinHallu reads back (`get_sample_identifier`) for an item id: the
 * source_id or original_index the id names. A repeated id was made unique at read time
 * (`source_id:X~2`), and is written so, so ClinHallu's loaders neither overwrite one item
 * with another nor skip it as already done.
 */
function identifierFields(itemId: string): Record<string, string | number> {
  const sep = itemId.indexOf(":");
  const kind = itemId.slice(0, sep);
  const value = itemId.slice(sep + 1);
  if (kind === "original_index") return { original_index: /^\d+$/.test(value) ? Number(value) : value };
  return { source_id: value };
}

/**
 * The gold records' own fields, minus their reference trace (what ClinHallu copies into
 * model and replace records), keyed by the item ids the dataset reader gave them: the same
 * sample id, made unique for a repeat, so each item meets its own record.
 */
async function goldRecords(input: string): Promise<Map<string, Record<string, unknown>>> {
  const out = new Map<string, Record<string, unknown>>();
  const ctx = new ReadContext("clinhallu", {});
  for await (const rec of readRecords(input)) {
    const r = "parseError" in rec ? null : asRecord(rec.value);
    if (!r) continue;
    const { gold_cot: _g, gold_cot_meta: _m, cot_valid: _v, ...rest } = r;
    out.set(ctx.claimId(clinhalluSampleId(r, clinhalluFallbackIndex(rec)).id).id, rest);
  }
  return out;
}

/**
 * Write a stage-wise eval folder's traces in ClinHallu's own layout — `model_cot.jsonl` and
 * `replace/replace_{vr,kr,vr_kr}.jsonl` — so ClinHallu's scripts (or `--traces`) can read
 * them: each record is the gold record without its reference trace, plus `cot`, `cot_meta`,
 * `cot_valid` and `cot_validation_reason`. One run of the folder (`run`, default 0).
 */
export async function exportTraces(dir: string, to: string, run = 0): Promise<Record<string, number>> {
  const manifest = await readManifest(dir);
  if (!manifest) throw new MedmmvError("NOT_FOUND", `${dir} is not an eval folder (no eval.json)`);
  if (manifest.dataset !== "clinhallu" || manifest.method !== "stagewise") throw new MedmmvError("INVALID_INPUT", `${dir} is a ${manifest.method} run on ${manifest.dataset}; export-traces needs --dataset clinhallu --method stagewise`);
  const gold = await goldRecords(manifest.input);
  const { records } = await readResults(path.join(dir, RESULTS_FILE));
  const model = manifest.models["executor"] ?? "unknown";
  const files = new Map<string, string[]>();
  const add = (file: string, rec: Record<string, unknown>) => (files.get(file) ?? files.set(file, []).get(file)!).push(JSON.stringify(rec));
  for (const r of records) {
    const t = r.stagewise?.trace;
    if (r.run !== run || r.status === "failed" || !t) continue;
    const base = { ...(gold.get(r.id) ?? {}), ...identifierFields(r.id) };
    const meta = { model, prompt_variant: "standard", generation_attempts: t.attempts, invalid_retry_attempts: (manifest.config["retries"] as number | undefined) ?? 0 };
    // A generation that failed for good is ClinHallu's api_failed record: no cot at all.
    const status = (x: JudgedTrace) => ({ cot_valid: x.valid, cot_validation_reason: x.validation, ...(x.valid ? {} : { generation_status: x.apiFailed ? "api_failed" : "invalid_cot" }) });
    const cot = (x: JudgedTrace) => (x.apiFailed ? null : cotOf(x));
    add("model_cot.jsonl", { ...base, cot: cot(t), cot_meta: { ...meta, mode: "model" }, ...status(t) });
    for (const [k, rep] of Object.entries(r.stagewise!.replacements) as Array<[ReplacementKey, { trace: JudgedTrace }]>) {
      const f = REPLACE_FILES[k];
      const m = { ...meta, mode: f.key, prompt_variant: f.key, generation_attempts: rep.trace.attempts, replaced_steps: f.replaced, ...(f.preserved ? { preserved_steps: f.preserved } : {}) };
      add(path.join("replace", `${f.key}.jsonl`), { ...base, experiment: f.key, cot: cot(rep.trace), cot_meta: m, ...status(rep.trace) });
    }
  }
  if (files.size === 0) throw new MedmmvError("INVALID_INPUT", `${dir} holds no finished stage-wise trace for run ${run}`);
  const counts: Record<string, number> = {};
  for (const [file, lines] of files) {
    const target = path.join(to, file);
    await mkdir(path.dirname(target), { recursive: true });
    const h = await open(target, "w");
    try {
      await h.write(lines.join("\n") + "\n");
    } finally {
      await h.close();
    }
    counts[file] = lines.length;
  }
  return counts;
}
