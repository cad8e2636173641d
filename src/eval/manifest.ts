import { readFile, rename, writeFile } from "node:fs/promises";
import path from "node:path";
import { MedmmvError } from "../core/contracts/errors.js";
import type { ConversationDatasetName, DatasetName, JsonlFieldMap } from "./datasets/types.js";
import type { MethodName } from "./methods/types.js";
import { canonicalJson } from "../core/contracts/canonical-json.js";
import type { InputPin, ProductPin } from "./input-pins.js";

export const MANIFEST_FILE = "eval.json";

/** DIR/eval.json: what a results folder was produced with, so --resume cannot mix configurations. */
export interface RunManifest {
  schema: "medmmv-eval-run/1";
  dataset: DatasetName | ConversationDatasetName;
  input: string;
  images: string | null;
  missingImages: "error" | "text-only";
  copBase: 0 | 1 | "auto";
  fieldMap: JsonlFieldMap | null;
  method: MethodName;
  label: string;
  runs: number;
  concurrency: number;
  selection: { sample: number | null; stratify: string[]; seed: number; limit: number | null; /** --where: field → the values kept (absent: every item). */ where?: Record<string, string[]> };
  /** The --input file's SHA-256 and size when the run started (absent in older folders): --resume refuses another file. */
  inputFile?: InputPin;
  /** Models of the run without a price (MEDMMV_PRICES or the catalog): their calls cost "unpriced", not $0. */
  unpriced?: string[];
  /** The product that ran: version, git commit (or a hash of its sources). Absent in older folders. */
  product?: ProductPin;
  /**
   * Later sessions (--resume) that ran other code than `product` (another source hash), in the
   * order they started: the folder's records were then produced by more than one product.
   */
  resumedWith?: ProductPin[];
  /** Method settings that change answers (k, repairs, selection rule, ablations, temperatures…). */
  config: Record<string, unknown>;
  models: Record<string, string>;
  raters: string[];
  prompts: Record<string, string>;
  /** The response-cache namespace of this eval's runs (eval/run-cache.ts); kept across --resume. Absent in older folders. */
  cacheScope?: string;
  createdAt: string;
  version: string;
}

export async function readManifest(dir: string): Promise<RunManifest | null> {
  try {
    return JSON.parse(await readFile(path.join(dir, MANIFEST_FILE), "utf8")) as RunManifest;
  } catch (e) {
    if ((e as { code?: string }).code === "ENOENT") return null;
    throw new MedmmvError("INVALID_INPUT", `${path.join(dir, MANIFEST_FILE)} is unreadable: ${(e as Error).message}`, { cause: e });
  }
}

/** Write via a temporary file and rename, so a kill never leaves half a JSON file. */
export async function writeJsonAtomic(file: string, value: unknown): Promise<void> {
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, typeof value === "string" ? value : JSON.stringify(value, null, 2) + "\n");
  await rename(tmp, file);
}


/**
 * The fields that must match for results to be comparable across a resume. Sampling,
 * limit, runs and concurrency may change (to extend a run); method, models, prompts,
 * ablations and how the dataset is read may not.
 */
export function manifestConflicts(prev: RunManifest, next: RunManifest): string[] {
  const fields: Array<keyof RunManifest> = ["dataset", "input", "images", "missingImages", "copBase", "fieldMap", "method", "config", "models", "raters", "prompts"];
  return fields.filter((f) => canonicalJson(prev[f] ?? null) !== canonicalJson(next[f] ?? null)).map((f) => `${f}: was ${canonicalJson(prev[f] ?? null).slice(0, 200)}, now ${canonicalJson(next[f] ?? null).slice(0, 200)}`);
}

/** Why a resumed run may not use this input: the file's bytes differ from what the folder's results were read from (null: the same, or not recorded). */
export function inputChange(prev: RunManifest, next: RunManifest): string | null {
  const a = prev.inputFile;
  const b = next.inputFile;
  if (!a || !b || a.sha256 === b.sha256) return null;
  return `the input file changed since the folder's results were produced: sha256 was ${a.sha256} (${a.bytes} bytes), now ${b.sha256} (${b.bytes} bytes)`;
}
