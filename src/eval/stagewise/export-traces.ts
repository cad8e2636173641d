import { mkdir, open } from "node:fs/promises";
import path from "node:path";
import { MedmmvError } from "../../core/contracts/errors.js";
import { clinhalluSampleId } from "../datasets/clinhallu-records.js";
import { asRecord, readRecords } from "../datasets/common.js";
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

/** The gold record's own fields, minus its reference trace (what ClinHallu copies into model and replace records). */
async function goldRecords(input: string): Promise<Map<string, Record<string, unknown>>> {
  const out = new Map<string, Record<string, unknown>>();
  for await (const rec of readRecords(input)) {
    const r = "parseError" in rec ? null : asRecord(rec.value);
    if (!r) continue;
    const { gold_cot: _g, gold_cot_meta: _m, cot_valid: _v, ...rest } = r;
    out.set(clinhalluSampleId(r, rec.index).id, rest);
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
    const base = gold.get(r.id) ?? {};
    const meta = { model, prompt_variant: "standard", generation_attempts: t.attempts, invalid_retry_attempts: (manifest.config["retries"] as number | undefined) ?? 0 };
    const status = (x: JudgedTrace) => ({ cot_valid: x.valid, cot_validation_reason: x.validation, ...(x.valid ? {} : { generation_status: "invalid_cot" }) });
    add("model_cot.jsonl", { ...base, cot: cotOf(t), cot_meta: { ...meta, mode: "model" }, ...status(t) });
    for (const [k, rep] of Object.entries(r.stagewise!.replacements) as Array<[ReplacementKey, { trace: JudgedTrace }]>) {
      const f = REPLACE_FILES[k];
      const m = { ...meta, mode: f.key, prompt_variant: f.key, generation_attempts: rep.trace.attempts, replaced_steps: f.replaced, ...(f.preserved ? { preserved_steps: f.preserved } : {}) };
      add(path.join("replace", `${f.key}.jsonl`), { ...base, experiment: f.key, cot: cotOf(rep.trace), cot_meta: m, ...status(rep.trace) });
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
