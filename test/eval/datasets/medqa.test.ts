import { writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { medqaAdapter } from "../../../src/eval/datasets/medqa.js";
import { type EvalItem, type ItemError, isItemError } from "../../../src/eval/datasets/types.js";
import { collect, onlyItems, readJsonl, useTempDir } from "./dataset-kit.js";

const SAMPLES = fileURLToPath(new URL("../../../test/fixtures/benchmark-samples/", import.meta.url));
const FIVE = path.join(SAMPLES, "medqa.jsonl");
const FOUR = path.join(SAMPLES, "medqa_4options.jsonl");

type Raw = { question: string; answer: string; answer_idx: string; options: Record<string, string>; meta_info: string };
async function raw(file: string): Promise<Raw[]> {
  return readJsonl<Raw>(file);
}

const tmp = useTempDir("medmmv-medqa-");

describe("MedQA", () => {
  it.each([
    [FIVE, ["A", "B", "C", "D", "E"]],
    [FOUR, ["A", "B", "C", "D"]],
  ])("reads %s with the letter from answer_idx", async (file, letters) => {
    const records = await raw(file);
    const got = onlyItems(await collect(medqaAdapter().read(file, {})));
    expect(got.map((i) => i.id)).toEqual(records.map((_, k) => `medqa-${k}`));
    for (const [k, item] of got.entries()) {
      const r = records[k]!;
      expect(Object.keys(item.case.options ?? {})).toEqual(letters);
      expect(item.case.question).toBe(r.question.trim());
      expect(item.gold).toEqual({ kind: "choice", option: r.answer_idx, text: r.answer });
      expect(item.strata).toEqual({ meta_info: r.meta_info });
      expect(item.warnings).toBeUndefined();
      // metamap_phrases are a preprocessing artefact, not case content.
      expect(JSON.stringify(item.case)).not.toContain("metamap");
    }
  });

  it("gives the same question different letters in the 4- and 5-option files", async () => {
    const five = onlyItems(await collect(medqaAdapter().read(FIVE, {})));
    const four = onlyItems(await collect(medqaAdapter().read(FOUR, {})));
    const pairs = five.map((f, k) => [f, four[k]!] as const);
    for (const [f, g] of pairs) {
      expect(f.case.question).toBe(g.case.question);
      expect(f.gold.text).toBe(g.gold.text);
    }
    expect(pairs.map(([f, g]) => `${f.gold.option}/${g.gold.option}`)).toEqual(["D/D", "A/A", "C/B", "E/D"]);
  });

  it("warns when the answer text disagrees, derives a missing letter, and rejects a letter outside the options", async () => {
    const [r] = await raw(FOUR);
    const file = path.join(tmp(), "edge.jsonl");
    const noIdx: Partial<Raw> = { ...r };
    delete noIdx.answer_idx;
    await writeFile(
      file,
      [
        JSON.stringify({ ...r, answer: "Something else" }),
        JSON.stringify(noIdx),
        JSON.stringify({ ...r, answer_idx: "E" }),
        JSON.stringify({ ...noIdx, answer: "not an option" }),
      ].join("\n"),
    );
    const out = await collect(medqaAdapter().read(file, {}));
    const [mismatch, derived, outside, unknown] = out;
    expect((mismatch as EvalItem).gold.option).toBe("D");
    expect((mismatch as EvalItem).warnings?.[0]).toContain("differs from option D");
    expect((derived as EvalItem).gold).toEqual({ kind: "choice", option: "D", text: r!.answer });
    expect((derived as EvalItem).warnings?.[0]).toContain("no answer_idx");
    expect(isItemError(outside!)).toBe(true);
    expect((outside as ItemError).error.message).toContain('"E"');
    expect(isItemError(unknown!)).toBe(true);
  });
});
