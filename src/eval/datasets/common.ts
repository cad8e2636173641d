import { createReadStream } from "node:fs";
import { open, readFile, stat } from "node:fs/promises";
import path from "node:path";
import { createInterface } from "node:readline";
import { describeZodIssues } from "../../core/contracts/zod-issues.js";
import { ClinicalCase } from "../../core/contracts/clinical-case.js";
import { MedmmvError } from "../../core/contracts/errors.js";
import type { AdapterOptions, ConversationDatasetName, DatasetName, EvalItem, GoldAnswer, ItemError } from "./types.js";

/** One record of a dataset file: its position, and either the parsed value or why it failed. */
export type RawRecord =
  | { index: number; line: number | null; value: unknown }
  | { index: number; line: number | null; parseError: string };

/**
 * Records of a JSONL file (streamed line by line) or of a JSON array file (VQA-RAD and the
 * PathVQA LXMERT files ship as arrays). `index` counts records, not lines, so blank lines do
 * not shift ids derived from it.
 */
export async function* readRecords(file: string): AsyncGenerator<RawRecord> {
  const resolved = path.resolve(file);
  const first = await firstSignificantChar(resolved);
  if (first === "[") {
    yield* readJsonArray(resolved);
    return;
  }
  const rl = createInterface({ input: createReadStream(resolved, { encoding: "utf8" }), crlfDelay: Infinity });
  let line = 0;
  let index = 0;
  try {
    for await (const raw of rl) {
      line++;
      const text = (line === 1 ? raw.replace(/^\uFEFF/, "") : raw).trim();
      if (text === "") continue;
      try {
        yield { index, line, value: JSON.parse(text) as unknown };
      } catch (e) {
        yield { index, line, parseError: `line ${line} is not valid JSON: ${(e as Error).message}` };
      }
      index++;
    }
  } catch (e) {
    throw unreadableFile(resolved, e);
  } finally {
    rl.close();
  }
}

async function* readJsonArray(file: string): AsyncGenerator<RawRecord> {
  let parsed: unknown;
  try {
    parsed = JSON.parse((await readFile(file, "utf8")).replace(/^\uFEFF/, ""));
  } catch (e) {
    if (e instanceof SyntaxError) {
      throw new MedmmvError("INVALID_INPUT", `dataset file ${file} starts with "[" but is not a valid JSON array: ${e.message}`);
    }
    throw unreadableFile(file, e);
  }
  if (!Array.isArray(parsed)) {
    throw new MedmmvError("INVALID_INPUT", `dataset file ${file} is not a JSON array`);
  }
  for (let index = 0; index < parsed.length; index++) yield { index, line: null, value: parsed[index] };
}

/** The first non-whitespace character decides JSON array vs JSONL without reading the whole file. */
async function firstSignificantChar(file: string): Promise<string | null> {
  let handle;
  try {
    const st = await stat(file);
    if (!st.isFile()) throw Object.assign(new Error("not a regular file"), { code: "EISDIR" });
    handle = await open(file, "r");
    const buf = Buffer.alloc(4096);
    let position = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buf, 0, buf.length, position);
      if (bytesRead === 0) return null;
      const chunk = buf.toString("utf8", 0, bytesRead).replace(/^\uFEFF/, "");
      const m = /\S/.exec(chunk);
      if (m) return m[0];
      position += bytesRead;
    }
  } catch (e) {
    throw unreadableFile(file, e);
  } finally {
    await handle?.close();
  }
}

function unreadableFile(file: string, e: unknown): MedmmvError {
  if (e instanceof MedmmvError) return e;
  const code = (e as { code?: unknown } | null)?.code;
  return new MedmmvError(
    "INVALID_INPUT",
    `cannot read dataset file ${file} (${typeof code === "string" ? code : (e as Error).message}); check --input`,
    { cause: e },
  );
}

export function asRecord(value: unknown): Record<string, unknown> | null {
  return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
}

/** A scalar field as trimmed text (numbers too: VQA-RAD answers can be integers); null when absent or empty. */
export function text(value: unknown): string | null {
  if (typeof value === "string") return value.trim() === "" ? null : value.trim();
  if (typeof value === "number" && Number.isFinite(value)) return String(value);
  if (typeof value === "boolean") return value ? "yes" : "no";
  return null;
}

export function itemError(id: string, message: string, code = "INVALID_INPUT"): ItemError {
  return { id, error: { code, message } };
}

/** Strata from named fields, skipping absent or empty values. */
/** What an item's error says when its images were not looked for at all (the runner refuses such a run up front). */
export const NO_IMAGES_FOLDER = "no images folder was given (--images)";

export function strataFrom(rec: Record<string, unknown>, fields: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const f of fields) {
    const v = text(rec[f]);
    if (v !== null) out[f] = v;
  }
  return out;
}

/** "yes" / "no" for a gold answer that is exactly one of them (any case, trailing period); else null. */
export function goldYesNo(answer: string): "yes" | "no" | null {
  const t = answer.trim().toLowerCase().replace(/[.!]+$/, "");
  return t === "yes" || t === "no" ? t : null;
}

/**
 * Per-read bookkeeping: unique ids (duplicates get a `~n` suffix so --resume still has a
 * stable key, with a warning) and a cache of image look-ups (VQA-RAD and PathVQA ask
 * many questions about one image).
 */
export class ReadContext {
  private readonly ids = new Map<string, number>();
  private readonly exists = new Map<string, Promise<boolean>>();

  constructor(
    readonly dataset: DatasetName | ConversationDatasetName,
    readonly opts: AdapterOptions,
  ) {}

  fallbackId(index: number): string {
    return `${this.dataset}-${index}`;
  }

  claimId(id: string): { id: string; warning?: string } {
    const seen = this.ids.get(id) ?? 0;
    this.ids.set(id, seen + 1);
    if (seen === 0) return { id };
    const unique = `${id}~${seen + 1}`;
    return { id: unique, warning: `id "${id}" repeats in the file; this occurrence is "${unique}"` };
  }

  private fileExists(file: string): Promise<boolean> {
    let p = this.exists.get(file);
    if (!p) {
      p = stat(file).then(
        (s) => s.isFile(),
        () => false,
      );
      this.exists.set(file, p);
    }
    return p;
  }

  /**
   * Resolve an item's image file names inside the images folder. `alternatives` gives
   * extra relative locations to try (e.g. PathVQA's `test/` sub-folder). A missing image
   * is an ItemError unless the run asked for text-only, in which case the item runs with
   * no images at all (a partial set could mislead the model) and says so.
   */
  async resolveImages(
    itemId: string,
    names: readonly string[],
    alternatives: (name: string) => string[] = () => [],
  ): Promise<
    | { ok: true; images: { id: string; path: string }[]; stratum?: "present" | "missing"; warnings: string[] }
    | { ok: false; error: ItemError }
  > {
    if (names.length === 0) return { ok: true, images: [], warnings: [] };
    const dir = this.opts.imagesDir === undefined ? null : path.resolve(this.opts.imagesDir);
    const images: { id: string; path: string }[] = [];
    const missing: string[] = [];
    const usedIds = new Set<string>();
    for (const name of names) {
      if (path.isAbsolute(name) || name.split(/[\\/]/).includes("..")) {
        return {
          ok: false,
          error: itemError(itemId, `image name "${name}" must be a relative path inside the images folder`),
        };
      }
      if (dir === null) {
        missing.push(name);
        continue;
      }
      let found: string | null = null;
      for (const rel of [name, ...alternatives(name)]) {
        const candidate = path.resolve(dir, rel);
        if (await this.fileExists(candidate)) {
          found = candidate;
          break;
        }
      }
      if (found === null) {
        missing.push(name);
        continue;
      }
      let id = path.basename(name).slice(0, 120) || "image";
      for (let n = 2; usedIds.has(id); n++) id = `${path.basename(name).slice(0, 110)}-${n}`;
      usedIds.add(id);
      images.push({ id, path: found });
    }
    if (missing.length === 0) return { ok: true, images, stratum: "present", warnings: [] };

    const where = dir === null ? NO_IMAGES_FOLDER : `not found in ${dir}`;
    if (this.opts.missingImages === "text-only") {
      return {
        ok: true,
        images: [],
        stratum: "missing",
        warnings: [`images missing (${missing.join(", ")}: ${where}): run text-only`],
      };
    }
    return {
      ok: false,
      error: itemError(
        itemId,
        `image file(s) ${missing.join(", ")} for item ${itemId}: ${where}; pass --images DIR pointing at the ` +
          `unpacked images, or run text-only (missingImages: "text-only")`,
      ),
    };
  }

  /**
   * resolveImages for a question item, with the outcome recorded on the item being built:
   * the `images` stratum (present / missing) and the warnings. Returns the case fields to
   * spread (`images` only when there are some), or the ItemError to yield instead.
   */
  async itemImages(
    itemId: string,
    names: readonly string[],
    item: { strata: Record<string, string>; warnings: string[] },
    alternatives?: (name: string) => string[],
  ): Promise<{ images?: { id: string; path: string }[] } | ItemError> {
    const imgs = await this.resolveImages(itemId, names, alternatives);
    if (!imgs.ok) return imgs.error;
    if (imgs.stratum) item.strata["images"] = imgs.stratum;
    item.warnings.push(...imgs.warnings);
    return imgs.images.length > 0 ? { images: imgs.images } : {};
  }

  /**
   * Validate the assembled case against the ClinicalCase contract, so that an item the
   * pipeline would refuse surfaces here as an ItemError with the offending field.
   */
  finish(draft: {
    id: string;
    case: Record<string, unknown>;
    gold: GoldAnswer;
    strata: Record<string, string>;
    warnings: string[];
  }): EvalItem | ItemError {
    const candidate = {
      ...draft.case,
      id: caseIdFor(draft.id),
      metadata: { dataset: this.dataset, itemId: draft.id, ...(asRecord(draft.case["metadata"]) ?? {}) },
    };
    const parsed = ClinicalCase.safeParse(candidate);
    if (!parsed.success) {
      return itemError(draft.id, `item ${draft.id} is not a valid case: ${describeZodIssues(parsed.error).message}`);
    }
    const item: EvalItem = { id: draft.id, case: parsed.data, gold: draft.gold, strata: draft.strata };
    if (draft.warnings.length > 0) item.warnings = draft.warnings;
    return item;
  }
}

/** Item ids may hold characters a case id may not (PathVQA's `#`); map them to `_`. */
export function caseIdFor(itemId: string): string {
  return itemId.replace(/[^A-Za-z0-9._:-]/g, "_").slice(0, 200) || "item";
}

/** Letters A, B, C… for a list of options. */
export function letterAt(i: number): string {
  return String.fromCharCode(65 + i);
}

/** One step of a dataset file: a record with its id (claimed unique), or a per-item error. */
export type DatasetRecordStep =
  | { id: string; index: number; warnings: string[]; record: Record<string, unknown> }
  | { error: ItemError };

/**
 * The loop every adapter starts with: read records, turn parse errors and non-objects into
 * per-item errors (the run records them and goes on), and give each record a unique id from
 * `idField` (or its position when the file has no ids).
 */
export async function* datasetRecords(ctx: ReadContext, file: string, idField: string | ((record: Record<string, unknown>) => string | null)): AsyncGenerator<DatasetRecordStep> {
  for await (const rec of readRecords(file)) {
    const fallback = ctx.fallbackId(rec.index);
    if ("parseError" in rec) {
      yield { error: itemError(fallback, rec.parseError) };
      continue;
    }
    const record = asRecord(rec.value);
    const claimed = ctx.claimId((record && (typeof idField === "string" ? text(record[idField]) : idField(record))) ?? fallback);
    if (record === null) {
      yield { error: itemError(claimed.id, `record ${rec.index} is not a JSON object`) };
      continue;
    }
    yield { id: claimed.id, index: rec.index, warnings: claimed.warning ? [claimed.warning] : [], record };
  }
}

export type DatasetRecord = Extract<DatasetRecordStep, { record: unknown }>;

/**
 * An adapter's read loop: every record of the file through `toItems` (which yields the
 * record's items or errors), with the records that never parsed passed on as errors.
 */
export async function* eachDatasetRecord(
  ctx: ReadContext,
  file: string,
  idField: Parameters<typeof datasetRecords>[2],
  toItems: (record: DatasetRecord) => AsyncGenerator<EvalItem | ItemError>,
): AsyncGenerator<EvalItem | ItemError> {
  for await (const entry of datasetRecords(ctx, file, idField)) {
    if ("error" in entry) yield entry.error;
    else yield* toItems(entry);
  }
}
