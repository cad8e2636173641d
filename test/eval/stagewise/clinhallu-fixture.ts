import path from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll } from "vitest";
import type { EvalItem } from "../../../src/eval/datasets/types.js";
import { readItems } from "../eval-fixtures.js";

/** The synthetic ClinHallu fixtures bundled in examples/clinhallu (see its README). */
export const CLINHALLU_DIR = fileURLToPath(new URL("../../../examples/clinhallu/", import.meta.url));
export const GOLD = path.join(CLINHALLU_DIR, "gold_cot.jsonl");
export const TRACES = path.join(CLINHALLU_DIR, "model_cot.jsonl");
export const IMAGES = path.join(CLINHALLU_DIR, "images");

/** The fixture's items, read once before the file's tests; call the result for them. */
export function useClinhalluItems(): () => EvalItem[] {
  let items: EvalItem[] = [];
  beforeAll(async () => {
    items = await readItems("clinhallu", GOLD, { imagesDir: IMAGES });
  });
  return () => items;
}
