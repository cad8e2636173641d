import { ReadContext, asRecord, itemError, strataFrom, text, eachDatasetRecord } from "./common.js";
import type { AdapterOptions, DatasetAdapter, EvalItem, ItemError } from "./types.js";

const ANSWER_CHOICES = "\nAnswer Choices:";

/**
 * MedXpertQA questions end with "\nAnswer Choices: (A) … (B) …". The options go into
 * `options`, so the block is removed to avoid showing them twice. Only the last block is
 * removed, and only when it starts with "(A)", so a vignette that merely mentions the
 * phrase stays intact. Returns whether the block listed the same options.
 */
export function stripAnswerChoices(
  question: string,
  options: Record<string, string>,
): { question: string; stripped: boolean; consistent: boolean } {
  const at = question.lastIndexOf(ANSWER_CHOICES);
  if (at < 0) return { question, stripped: false, consistent: true };
  const block = question.slice(at + ANSWER_CHOICES.length);
  if (!/^\s*\(A\)/.test(block)) return { question, stripped: false, consistent: true };
  const squash = (s: string) => s.replace(/\s+/g, " ").trim();
  const flat = squash(block);
  const consistent = Object.entries(options).every(([letter, opt]) => flat.includes(`(${letter}) ${squash(opt)}`));
  return { question: question.slice(0, at).trimEnd(), stripped: true, consistent };
}

/** Options from the HF layout `{A: "…"}` or the official eval layout `[{letter, content}]`. */
function readOptions(raw: unknown): Record<string, string> | null {
  if (Array.isArray(raw)) {
    const out: Record<string, string> = {};
    for (const o of raw) {
      const r = asRecord(o);
      const letter = text(r?.["letter"]);
      const content = text(r?.["content"]);
      if (letter === null || content === null) return null;
      out[letter.toUpperCase()] = content;
    }
    return out;
  }
  const r = asRecord(raw);
  if (r === null) return null;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(r)) {
    const content = text(v);
    if (content === null) return null;
    out[k.trim().toUpperCase()] = content;
  }
  return out;
}

/** `"E"` (HF) or `["E"]` (official eval copy). */
function readLabel(raw: unknown): string | null {
  const v = Array.isArray(raw) ? (raw.length === 1 ? raw[0] : null) : raw;
  const t = text(v);
  return t === null ? null : t.toUpperCase();
}

/** Bare names `["MM-1-a.jpeg"]` (HF) or `[{image_path}]` (official eval copy). */
function readImageNames(raw: unknown): string[] | null {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) return null;
  const out: string[] = [];
  for (const i of raw) {
    const name = typeof i === "string" ? text(i) : text(asRecord(i)?.["image_path"]);
    if (name === null) return null;
    out.push(name);
  }
  return out;
}

async function* read(file: string, opts: AdapterOptions): AsyncGenerator<EvalItem | ItemError> {
  const ctx = new ReadContext("medxpertqa", opts);
  yield* eachDatasetRecord(ctx, file, "id", async function* ({ id, warnings, record: r }) {
    const options = readOptions(r["options"]);
    const question = text(r["question"]);
    const label = readLabel(r["label"]);
    const names = readImageNames(r["images"]);
    if (question === null || options === null || label === null || names === null) {
      yield itemError(id, `item ${id} lacks a usable question, options, label or images field`);
      return;
    }
    const gold = options[label];
    if (gold === undefined) {
      yield itemError(id, `item ${id}: label "${label}" is not one of the options ${Object.keys(options).join(", ")}`);
      return;
    }
    const stripped = stripAnswerChoices(question, options);
    if (stripped.stripped && !stripped.consistent) {
      warnings.push("the question's Answer Choices block differs from `options`; `options` was used");
    }

    const strata = strataFrom(r, ["body_system", "medical_task", "question_type"]);
    const subset = /^(MM|Text)-/.exec(id)?.[1];
    if (subset) strata["subset"] = subset;

    // MM images are bare file names, sometimes with a folder in the eval copy ("images/MM-1-a.jpeg").
    const imgs = await ctx.itemImages(id, names, { strata, warnings }, (n) => (n.includes("/") ? [n.slice(n.lastIndexOf("/") + 1)] : []));
    if ("error" in imgs) {
      yield imgs;
      return;
    }

    yield ctx.finish({
      id,
      case: {
        question: stripped.question,
        options,
        ...imgs,
      },
      gold: { kind: "choice", option: label, text: gold },
      strata,
      warnings,
    });
  });
}

export function medxpertqaAdapter(): DatasetAdapter {
  return { name: "medxpertqa", read };
}
