import path from "node:path";
import { MedmmvError } from "../../core/contracts/errors.js";
import { ReadContext, asRecord, eachDatasetRecord, goldYesNo, itemError, letterAt, text } from "./common.js";
import type { AdapterOptions, DatasetAdapter, EvalItem, GoldAnswer, ItemError, JsonlFieldMap } from "./types.js";

export const DEFAULT_FIELD_MAP: Required<Omit<JsonlFieldMap, "strata">> & { strata: string[] } = {
  id: "id",
  question: "question",
  options: "options",
  answer: "answer",
  answerKind: "answer_kind",
  notes: "notes",
  images: "images",
  strata: [],
};

/** A field by dotted path ("meta.subject"); a key that itself contains dots is tried first. */
function getField(rec: Record<string, unknown>, field: string): unknown {
  if (field in rec) return rec[field];
  let cur: unknown = rec;
  for (const part of field.split(".")) {
    const r = asRecord(cur);
    if (r === null) return undefined;
    cur = r[part];
  }
  return cur;
}

const LETTER_PREFIX = /^\(?([A-Za-z])[.):]\s+/;

/**
 * Options as `{A: "…"}`, `["A. …", "B. …"]` / `["…", "…"]` (lettered by position; a
 * matching "A. " prefix is dropped) or `[{letter, content}]`. Null when unusable.
 */
function readOptions(raw: unknown): Record<string, string> | null {
  if (raw === undefined || raw === null) return {};
  if (Array.isArray(raw)) {
    const out: Record<string, string> = {};
    for (let i = 0; i < raw.length; i++) {
      const el = raw[i];
      const obj = asRecord(el);
      if (obj !== null) {
        const letter = text(obj["letter"])?.toUpperCase();
        const content = text(obj["content"]);
        if (!letter || content === null) return null;
        out[letter] = content;
        continue;
      }
      const t = text(el);
      if (t === null) return null;
      const letter = letterAt(i);
      const m = LETTER_PREFIX.exec(t);
      out[letter] = m && m[1]!.toUpperCase() === letter ? t.slice(m[0].length).trim() : t;
    }
    return out;
  }
  const r = asRecord(raw);
  if (r === null) return null;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(r)) {
    const t = text(v);
    if (t === null) return null;
    out[k.trim().toUpperCase()] = t;
  }
  return out;
}

function readImageNames(raw: unknown): string[] | null {
  if (raw === undefined || raw === null) return [];
  const list = Array.isArray(raw) ? raw : [raw];
  const out: string[] = [];
  for (const el of list) {
    const obj = asRecord(el);
    const name = obj === null ? text(el) : text(obj["path"] ?? obj["image_path"] ?? obj["file"]);
    if (name === null) return null;
    out.push(name);
  }
  return out;
}

const squash = (s: string) => s.replace(/\s+/g, " ").trim().toLowerCase();

/**
 * The gold answer. With options, the answer must name one: a bare letter ("C", "(C)"), a
 * lettered text ("C. Radial"), or exactly one option's text. Without options, yes/no is
 * closed and anything else open. An explicit kind field overrides the inference.
 */
function readGold(answer: string, options: Record<string, string>, kind: string | null): GoldAnswer | string {
  const hasOptions = Object.keys(options).length > 0;
  if (kind === "choice" || (kind === null && hasOptions)) {
    const bare = /^\(?([A-Za-z])\)?\.?$/.exec(answer)?.[1]?.toUpperCase();
    if (bare && options[bare] !== undefined) return { kind: "choice", option: bare, text: options[bare] };
    const prefixed = LETTER_PREFIX.exec(answer)?.[1]?.toUpperCase();
    if (prefixed && options[prefixed] !== undefined) return { kind: "choice", option: prefixed, text: options[prefixed] };
    const byText = Object.entries(options).filter(([, t]) => squash(t) === squash(answer));
    if (byText.length === 1) return { kind: "choice", option: byText[0]![0], text: byText[0]![1] };
    return hasOptions
      ? `answer "${answer.slice(0, 80)}" names none of the options ${Object.keys(options).join(", ")}`
      : "answer kind is choice but the item has no options";
  }
  if (kind === "closed" || (kind === null && goldYesNo(answer) !== null)) {
    return { kind: "closed", text: goldYesNo(answer) ?? answer };
  }
  if (kind === "open" || kind === null) return { kind: "open", text: answer };
  return `answer kind "${kind}" is not choice, closed or open`;
}

/**
 * Any JSONL (or JSON array) of questions, through a field map. Image names resolve against
 * --images, or against the file's own folder when no images folder is given.
 */
export function jsonlAdapter(): DatasetAdapter {
  async function* read(file: string, opts: AdapterOptions): AsyncGenerator<EvalItem | ItemError> {
    const unknownKeys = Object.keys(opts.fieldMap ?? {}).filter((k) => !Object.hasOwn(DEFAULT_FIELD_MAP, k));
    if (unknownKeys.length) throw new MedmmvError("INVALID_INPUT", `--field-map: ${unknownKeys.map((k) => `"${k}"`).join(", ")} ${unknownKeys.length === 1 ? "is not a key" : "are not keys"} of the field map; use ${Object.keys(DEFAULT_FIELD_MAP).join(", ")}`);
    const map = { ...DEFAULT_FIELD_MAP, ...definedOnly(opts.fieldMap ?? {}) };
    // The fields the map names explicitly: one that no record has is a misspelling, refused once the file is read.
    const named = [...Object.entries(definedOnly(opts.fieldMap ?? {})).flatMap(([k, v]) => (k === "strata" ? (v as string[]) : [v as string]))];
    const found = new Set<string>();
    const fields = new Set<string>();
    const ctx = new ReadContext("jsonl", { ...opts, imagesDir: opts.imagesDir ?? path.dirname(path.resolve(file)) });
    yield* eachDatasetRecord(ctx, file, (r) => text(getField(r, map.id)), async function* ({ id, warnings, record: r }) {
      for (const k of Object.keys(r)) fields.add(k);
      for (const f of named) if (getField(r, f) !== undefined) found.add(f);
      const question = text(getField(r, map.question));
      const answer = text(getField(r, map.answer));
      if (question === null || answer === null) {
        yield itemError(id, `item ${id} lacks "${map.question}" or "${map.answer}" (set the field map if they are named differently)`);
        return;
      }
      const options = readOptions(getField(r, map.options));
      if (options === null) {
        yield itemError(id, `item ${id}: "${map.options}" is neither an object of letters nor a list of options`);
        return;
      }
      const kind = text(getField(r, map.answerKind))?.toLowerCase() ?? null;
      const gold = readGold(answer, options, kind);
      if (typeof gold === "string") {
        yield itemError(id, `item ${id}: ${gold}`);
        return;
      }
      const names = readImageNames(getField(r, map.images));
      if (names === null) {
        yield itemError(id, `item ${id}: "${map.images}" holds something other than image file names`);
        return;
      }

      const strata: Record<string, string> = {};
      for (const f of map.strata) {
        const v = text(getField(r, f));
        if (v !== null) strata[f] = v;
      }
      const imgs = await ctx.itemImages(id, names, { strata, warnings });
      if ("error" in imgs) {
        yield imgs;
        return;
      }

      const notes = text(getField(r, map.notes));
      yield ctx.finish({
        id,
        case: {
          question,
          ...(Object.keys(options).length > 0 ? { options } : {}),
          ...(notes !== null ? { notes } : {}),
          ...imgs,
        },
        gold,
        strata,
        warnings,
      });
    });
    const missing = named.filter((f) => !found.has(f));
    if (missing.length && fields.size > 0)
      throw new MedmmvError("INVALID_INPUT", `--field-map: no record has ${missing.map((f) => `"${f}"`).join(", ")}; the records' fields: ${[...fields].sort().join(", ")}`);
  }
  return { name: "jsonl", read };
}

function definedOnly(map: JsonlFieldMap): Partial<JsonlFieldMap> {
  return Object.fromEntries(Object.entries(map).filter(([, v]) => v !== undefined)) as Partial<JsonlFieldMap>;
}
