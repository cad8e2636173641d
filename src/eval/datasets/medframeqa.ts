import path from "node:path";
import { ReadContext, asRecord, itemError, letterAt, strataFrom, text, eachDatasetRecord } from "./common.js";
import type { AdapterOptions, DatasetAdapter, EvalItem, ItemError } from "./types.js";

/**
 * MedFrameQA (Yu et al. 2025, multi-image VQA from clinical videos: 2–5 frames a question,
 * 2,851 questions; CC BY 4.0), as published on Hugging Face and exported to JSON or JSONL
 * (`datasets`' to_json, or pandas' read_parquet(…).to_json(orient="records", lines=True)).
 *
 * Columns as the dataset card documents them (OctoMed/MedFrameQA): question_id, system,
 * organ, keyword, modality, video_id, question, options (the option texts, in order),
 * image_url, reasoning_chain, image (the frames, in order), image_hash, answer. The first
 * release (SuhaoYu1020/MedFrameQA) holds the frames as image_1 … image_5 and the key as
 * correct_answer; both are read.
 *
 * Frames are files in --images: each is found by its `image` entry's path (a name, or
 * `{path}` as `datasets` writes an Image), else by the basename of its image_url, else by its
 * image_hash with a usual image extension. They are sent in order, each image named by its
 * frame number ("frame 2 of 4"), so the model can say which frame shows what.
 *
 * Strata: system, organ and modality (the card's own fields), and `frames` (how many images).
 * The reasoning chain (the authors' rationale) is read past: it is never shown to the model,
 * and grading uses the key alone.
 */
const FRAME_COLUMNS = ["image_1", "image_2", "image_3", "image_4", "image_5"];
const EXTENSIONS = [".jpg", ".jpeg", ".png", ".webp"];

function frameName(entry: unknown): string | null {
  if (typeof entry === "string") return text(entry);
  const r = asRecord(entry);
  return r ? text(r["path"]) : null;
}

/** The frames' file names in order, from whichever columns the export kept; null when a frame has no usable name. */
function frameNames(r: Record<string, unknown>): string[] | null {
  const listed = Array.isArray(r["image"]) ? (r["image"] as unknown[]) : FRAME_COLUMNS.map((c) => r[c]).filter((v) => v !== null && v !== undefined);
  const urls = Array.isArray(r["image_url"]) ? (r["image_url"] as unknown[]) : [];
  const hashes = Array.isArray(r["image_hash"]) ? (r["image_hash"] as unknown[]) : [];
  const n = Math.max(listed.length, urls.length, hashes.length);
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const url = text(urls[i]);
    const name = frameName(listed[i]) ?? (url ? path.posix.basename(new URL(url, "file:///").pathname) : null) ?? text(hashes[i]);
    if (!name) return null;
    out.push(name);
  }
  return out;
}

/** Options as published: texts in order (lettered A, B, …); a leading "A." or "(A)" the export may carry is dropped. */
function readOptions(raw: unknown): Record<string, string> | null {
  if (!Array.isArray(raw) || raw.length < 2) return null;
  const out: Record<string, string> = {};
  for (let i = 0; i < raw.length; i++) {
    const t = text(raw[i]);
    if (t === null) return null;
    const letter = letterAt(i);
    out[letter] = t.replace(new RegExp(`^\\(?${letter}\\)?[.:)]\\s*`), "").trim() || t;
  }
  return out;
}

/** The key as a letter: "B", "(B)", "B. text", or the option's own text. */
function answerLetter(raw: unknown, options: Record<string, string>): string | null {
  const t = text(raw);
  if (t === null) return null;
  const m = /^\(?([A-Z])\)?(?:[.:)]\s*|$)/.exec(t);
  if (m && options[m[1]!] !== undefined) return m[1]!;
  const squash = (s: string) => s.replace(/\s+/g, " ").trim().toLowerCase();
  return Object.keys(options).find((l) => squash(options[l]!) === squash(t)) ?? null;
}

async function* read(file: string, opts: AdapterOptions): AsyncGenerator<EvalItem | ItemError> {
  const ctx = new ReadContext("medframeqa", opts);
  yield* eachDatasetRecord(ctx, file, "question_id", async function* ({ id, warnings, record: r }) {
    const question = text(r["question"]);
    const options = readOptions(r["options"]);
    const names = frameNames(r);
    if (question === null || options === null || names === null) {
      yield itemError(id, `item ${id} lacks a usable question, options (a list of texts) or frames (image / image_url / image_1…)`);
      return;
    }
    const label = answerLetter(r["answer"] ?? r["correct_answer"], options);
    if (label === null) {
      yield itemError(id, `item ${id}: answer ${JSON.stringify(r["answer"] ?? r["correct_answer"])} is neither an option letter (${Object.keys(options).join(", ")}) nor an option's text`);
      return;
    }
    if (names.length < 2 || names.length > 5) warnings.push(`${names.length} frames; MedFrameQA questions have 2 to 5`);
    const strata = strataFrom(r, ["system", "organ", "modality"]);
    strata["frames"] = String(names.length);

    const imgs = await ctx.itemImages(id, names, { strata, warnings }, (n) => (path.extname(n) ? [] : EXTENSIONS.map((e) => n + e)));
    if ("error" in imgs) {
      yield imgs;
      return;
    }
    // In order, each named by its frame number: the question is about how the frames relate.
    const images = imgs.images?.map((img, i, all) => ({ ...img, id: `frame ${i + 1} of ${all.length}` }));
    yield ctx.finish({
      id,
      case: { question, options, ...(images ? { images } : {}) },
      gold: { kind: "choice", option: label, text: options[label]! },
      strata,
      warnings,
    });
  });
}

export function medframeqaAdapter(): DatasetAdapter {
  return { name: "medframeqa", read };
}
