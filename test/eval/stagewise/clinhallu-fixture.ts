import path from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll } from "vitest";
import type { EvalItem } from "../../../src/eval/datasets/types.js";
import type { ResultRecord } from "../../../src/eval/results-file.js";
import type { JudgedTrace, StageJudgments } from "../../../src/eval/stagewise/types.js";
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

/** Model calls whose results a record holds: trace attempts, judge-made answer verdicts, judge-made stage verdicts. */
export function paidFor(r: ResultRecord): number {
  const sw = r.stagewise;
  if (!sw?.trace) return 0;
  const trace = (t: JudgedTrace) => t.attempts + (t.answerBy === "judge" && t.answerCorrect !== null ? 1 : 0);
  const judged = (j: StageJudgments) => Object.values(j).filter((v) => v.by === "judge").length;
  return trace(sw.trace) + judged(sw.judged) + Object.values(sw.replacements).reduce((n, x) => n + trace(x.trace) + judged(x.judged), 0);
}
