import { MedmmvError } from "../../core/contracts/errors.js";
import { STAGE_HEADERS } from "../stagewise/trace-parser.js";
import { STAGES, type ExternalTrace, type ItemStagewise } from "../stagewise/types.js";
import { clinhalluFallbackIndex, clinhalluSampleId, traceFromCot } from "./clinhallu-records.js";
import { readClinhalluTraces } from "./clinhallu-traces.js";
import { ReadContext, asRecord, goldYesNo, itemError, readRecords, strataFrom, text } from "./common.js";
import type { AdapterOptions, DatasetAdapter, EvalItem, GoldAnswer, ItemError } from "./types.js";

const QUESTION_TYPES = new Set(["yes_no", "open_ended", "multiple_choice"]);

/** `["A. Pneumonia", …]` → `{A: "Pneumonia"}`; null when an entry has no letter prefix. */
export function readLetteredOptions(raw: unknown): Record<string, string> | null {
  if (!Array.isArray(raw) || raw.length === 0) return null;
  const out: Record<string, string> = {};
  for (const o of raw) {
    const m = typeof o === "string" ? /^\s*\(?([A-Za-z])[.):]\s*(.*)$/s.exec(o) : null;
    if (!m) return null;
    out[m[1]!.toUpperCase()] = m[2]!.trim();
  }
  return out;
}

/** Image names: strings, or objects with `image_path` / `path`; a singular `image` is read as a list of one. */
function readImageNames(r: Record<string, unknown>): string[] | null {
  const raw = r["images"] ?? (r["image"] !== undefined ? [r["image"]] : []);
  if (!Array.isArray(raw)) return null;
  const out: string[] = [];
  for (const i of raw) {
    const o = asRecord(i);
    const name = typeof i === "string" ? text(i) : text(o?.["image_path"] ?? o?.["path"]);
    if (name === null) return null;
    out.push(name);
  }
  return out;
}

/** The gold answer by ClinHallu's question_type; MC answers read `"C. Lung cancer"` and `answer_letter` "C". */
function goldOf(r: Record<string, unknown>, qType: string, answer: string, options: Record<string, string> | null): GoldAnswer | string {
  if (qType === "multiple_choice") {
    if (options === null) return "a multiple_choice item needs `options` as a list of \"A. text\" strings";
    const letter = (text(r["answer_letter"]) ?? /^\s*\(?([A-Za-z])[.):](?:\s|$)/.exec(answer)?.[1] ?? "").toUpperCase();
    if (options[letter] === undefined) return `answer_letter "${letter}" is not one of the options ${Object.keys(options).join(", ")}`;
    return { kind: "choice", option: letter, text: options[letter]! };
  }
  if (qType === "yes_no") return { kind: "closed", text: goldYesNo(answer) ?? answer };
  return { kind: "open", text: answer };
}

/**
 * ClinHallu `gold_cot.jsonl` (reference §1.1): the benchmark question, its gold answer and
 * the reference trace in `gold_cot`. Strict about what it needs (question, answer,
 * question_type, a sample id; options and a letter for MC), tolerant of everything else.
 * Item ids are ClinHallu's sample ids (`source_id:MM-26`, `original_index:12`), so they
 * line up with a `model_cot.jsonl` given as --traces.
 */
export function clinhalluAdapter(): DatasetAdapter {
  let facts: Record<string, unknown> = {};
  async function* read(file: string, opts: AdapterOptions): AsyncGenerator<EvalItem | ItemError> {
    const ctx = new ReadContext("clinhallu", opts);
    let traces: Map<string, ExternalTrace> | null = null;
    if (opts.tracesFile) {
      const t = await readClinhalluTraces(opts.tracesFile);
      traces = t.traces;
      facts = { traces: opts.tracesFile, traceRecords: t.traces.size, unreadableTraceRecords: t.unreadable };
    }
    let withoutReference = 0;
    let withoutTrace = 0;
    for await (const rec of readRecords(file)) {
      if ("parseError" in rec) {
        yield itemError(ctx.fallbackId(rec.index), rec.parseError);
        continue;
      }
      const r = asRecord(rec.value);
      if (r === null) {
        yield itemError(ctx.fallbackId(rec.index), `record ${rec.index} is not a JSON object`);
        continue;
      }
      const sample = clinhalluSampleId(r, clinhalluFallbackIndex(rec));
      const claimed = ctx.claimId(sample.id);
      const id = claimed.id;
      const warnings: string[] = claimed.warning ? [claimed.warning] : [];
      if (sample.defaulted) warnings.push(`no source_id or original_index: identified by its position (${id})`);
      const question = text(r["question"]);
      const answer = text(r["answer"]);
      const qType = text(r["question_type"]);
      if (question === null || answer === null) {
        yield itemError(id, `item ${id} lacks a question or an answer`);
        continue;
      }
      if (qType === null || !QUESTION_TYPES.has(qType)) {
        yield itemError(id, `item ${id}: question_type ${JSON.stringify(r["question_type"] ?? null)} is not one of ${[...QUESTION_TYPES].join(", ")}`);
        continue;
      }
      const options = readLetteredOptions(r["options"]);
      const gold = goldOf(r, qType, answer, options);
      if (typeof gold === "string") {
        yield itemError(id, `item ${id}: ${gold}`);
        continue;
      }
      const names = readImageNames(r);
      if (names === null) {
        yield itemError(id, `item ${id}: images must be a list of file names (or objects with image_path)`);
        continue;
      }
      if (r["gold_cot"] !== undefined && asRecord(r["gold_cot"]) === null) {
        yield itemError(id, `item ${id}: gold_cot is not an object`);
        continue;
      }
      const reference = traceFromCot(r["gold_cot"])?.stages ?? null;
      if (reference === null) {
        withoutReference++;
        warnings.push("no gold_cot: no reference trace (no replacements; stages are judged against the case alone)");
      } else {
        const empty = STAGES.filter((s) => reference[s] === "").map((s) => STAGE_HEADERS[s]);
        if (empty.length) warnings.push(`gold_cot has no text for ${empty.join(", ")}: that reference stage reads "(empty)"`);
      }
      const stagewise: ItemStagewise = { reference };
      if (traces) {
        stagewise.external = traces.get(sample.id) ?? null;
        if (stagewise.external === null) withoutTrace++;
      }

      const strata: Record<string, string> = { question_type: qType, ...strataFrom(r, ["source", "body_system", "modality", "specialty"]) };
      const imgs = await ctx.itemImages(id, names, { strata, warnings });
      if ("error" in imgs) {
        yield imgs;
        continue;
      }
      const item = ctx.finish({
        id,
        case: { question, ...(options && qType === "multiple_choice" ? { options } : {}), ...imgs },
        gold,
        strata,
        warnings,
      });
      if (!("error" in item)) item.stagewise = stagewise;
      yield item;
    }
    facts = { ...facts, itemsWithoutReference: withoutReference, ...(traces ? { itemsWithoutTrace: withoutTrace } : {}) };
  }
  return {
    name: "clinhallu",
    read(file, opts) {
      if (opts.tracesFile === "") throw new MedmmvError("INVALID_INPUT", "--traces needs a file");
      return read(file, opts);
    },
    describe: () => facts,
  };
}
