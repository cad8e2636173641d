import { ReadContext, asRecord, itemError, text, eachDatasetRecord } from "./common.js";
import type { AdapterOptions, DatasetAdapter, EvalItem, ItemError } from "./types.js";

const squash = (s: string) => s.replace(/\s+/g, " ").trim();

/**
 * MedQA (USMLE) in the jind11 layout, 5-option or 4-option. Records have no id, so the id
 * is the record's position (`medqa-0`, …): stable for a given file. The 4- and 5-option
 * files can give the same question different letters, so the letter is always read from
 * the file at hand, and cross-checked with the answer text.
 */
async function* read(file: string, opts: AdapterOptions): AsyncGenerator<EvalItem | ItemError> {
  const ctx = new ReadContext("medqa", opts);
  yield* eachDatasetRecord(ctx, file, "id", async function* ({ id, warnings, record: r }) {
    const question = text(r["question"]);
    const rawOptions = asRecord(r["options"]);
    if (question === null || rawOptions === null) {
      yield itemError(id, `item ${id} lacks a question or an options object`);
      return;
    }
    const options: Record<string, string> = {};
    for (const [k, v] of Object.entries(rawOptions)) {
      const t = text(v);
      if (t !== null) options[k.trim().toUpperCase()] = t;
    }

    const answerText = text(r["answer"]);
    let letter = text(r["answer_idx"])?.toUpperCase() ?? null;
    if (letter === null && answerText !== null) {
      const matches = Object.entries(options).filter(([, t]) => squash(t) === squash(answerText));
      if (matches.length === 1) {
        letter = matches[0]![0];
        warnings.push(`no answer_idx; letter ${letter} taken from the answer text`);
      }
    }
    if (letter === null) {
      yield itemError(id, `item ${id} has no answer_idx and its answer text matches no single option`);
      return;
    }
    const goldText = options[letter];
    if (goldText === undefined) {
      yield itemError(id, `item ${id}: answer_idx "${letter}" is not one of the options ${Object.keys(options).join(", ")}`);
      return;
    }
    if (answerText !== null && squash(answerText) !== squash(goldText)) {
      warnings.push(`answer text "${answerText.slice(0, 80)}" differs from option ${letter}; answer_idx was used`);
    }

    const strata: Record<string, string> = {};
    const step = text(r["meta_info"]);
    if (step !== null) strata["meta_info"] = step;

    yield ctx.finish({
      id,
      case: { question, options },
      gold: { kind: "choice", option: letter, text: goldText },
      strata,
      warnings,
    });
  });
}

export function medqaAdapter(): DatasetAdapter {
  return { name: "medqa", read };
}
