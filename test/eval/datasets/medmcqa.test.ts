import { writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { MedmmvError } from "../../../src/core/contracts/errors.js";
import { detectCopBase, medmcqaAdapter } from "../../../src/eval/datasets/medmcqa.js";
import { type EvalItem, type ItemError, isItemError } from "../../../src/eval/datasets/types.js";
import { collect, readJsonl, useTempDir } from "./dataset-kit.js";

const SAMPLE = fileURLToPath(new URL("../../../test/fixtures/benchmark-samples/medmcqa.jsonl", import.meta.url));

type Raw = Record<string, unknown> & { id: string; cop: number; exp: string | null };
async function raw(): Promise<Raw[]> {
  return readJsonl<Raw>(SAMPLE);
}

const tmp = useTempDir("medmmv-medmcqa-");

async function fixture(name: string, records: unknown[]): Promise<string> {
  const file = path.join(tmp(), name);
  await writeFile(file, records.map((r) => JSON.stringify(r)).join("\n") + "\n");
  return file;
}

describe("MedMCQA (HF sample)", () => {
  it("reads the sample as 0-based by default and says the base was assumed", async () => {
    const records = await raw();
    // Only 1 and 3 occur: neither a 0 nor a 4 settles the base.
    expect(new Set(records.map((r) => r.cop))).toEqual(new Set([1, 3]));
    const adapter = medmcqaAdapter();
    const out = (await collect(adapter.read(SAMPLE, {}))) as EvalItem[];
    expect(out.filter(isItemError)).toEqual([]);
    expect(out.map((i) => i.id)).toEqual(records.map((r) => r.id));
    expect(out.map((i) => i.gold.option)).toEqual(["B", "B", "D", "D"]);
    expect(out[2]!.gold.text).toBe("Single breath nitrogen test");
    expect(out[0]!.case.options).toEqual({ A: "V", B: "Al", C: "Ti", D: "Al, V" });
    expect(out[0]!.strata).toEqual({ subject_name: "Dental" });
    expect(adapter.describe?.()).toMatchObject({ copBase: 0, copBaseSource: "default" });
    // The explanation gives the answer away; it must not reach the model.
    for (const [k, item] of out.entries()) {
      const exp = records[k]!.exp;
      if (exp) expect(JSON.stringify(item.case)).not.toContain(exp.slice(0, 40));
    }
  });

  it("honours an explicit 1-based override", async () => {
    const adapter = medmcqaAdapter();
    const out = (await collect(adapter.read(SAMPLE, { medmcqaCopBase: 1 }))) as EvalItem[];
    expect(out.map((i) => i.gold.option)).toEqual(["A", "A", "C", "C"]);
    expect(out[0]!.gold.text).toBe("V");
    expect(adapter.describe?.()).toMatchObject({ copBase: 1, copBaseSource: "option" });
  });
});

describe("MedMCQA cop base detection", () => {
  const base = { question: "Q?", opa: "a", opb: "b", opc: "c", opd: "d", subject_name: "Anatomy" };

  it("detects 0-based from a 0 and 1-based from a 4", async () => {
    const zero = await fixture("zero.jsonl", [
      { ...base, id: "z1", cop: 2 },
      { ...base, id: "z2", cop: 0 },
    ]);
    const a = medmcqaAdapter();
    const zs = (await collect(a.read(zero, {}))) as EvalItem[];
    expect(zs.map((i) => i.gold.option)).toEqual(["C", "A"]);
    expect(a.describe?.()).toMatchObject({ copBase: 0, copBaseSource: "detected", copBaseReason: "cop = 0 in record 1" });

    // Drive layout: 1-based, with choice_type.
    const four = await fixture("four.jsonl", [
      { ...base, id: "f1", cop: 2, choice_type: "single" },
      { ...base, id: "f2", cop: 4, choice_type: "multi" },
    ]);
    const b = medmcqaAdapter();
    const fs = (await collect(b.read(four, {}))) as EvalItem[];
    expect(fs.map((i) => i.gold.option)).toEqual(["B", "D"]);
    expect(fs[1]!.strata).toEqual({ subject_name: "Anatomy", choice_type: "multi" });
    expect(b.describe?.()).toMatchObject({ copBase: 1, copBaseSource: "detected" });
  });

  it("refuses a file with both 0 and 4, unless the base is given", async () => {
    const both = await fixture("both.jsonl", [
      { ...base, id: "b1", cop: 0 },
      { ...base, id: "b2", cop: 4 },
    ]);
    await expect(detectCopBase(both)).rejects.toBeInstanceOf(MedmmvError);
    await expect(collect(medmcqaAdapter().read(both, {}))).rejects.toMatchObject({ code: "INVALID_INPUT" });
    const forced = await collect(medmcqaAdapter().read(both, { medmcqaCopBase: 1 }));
    expect(isItemError(forced[0]!)).toBe(true);
    expect((forced[0] as ItemError).error.message).toContain("out of range");
    expect((forced[1] as EvalItem).gold.option).toBe("D");
  });

  it("turns unlabelled (-1) items and empty options into item errors or warnings", async () => {
    const file = await fixture("edge.jsonl", [
      { ...base, id: "t1", cop: -1 },
      { ...base, id: "t2", cop: 1, opd: "" },
      { ...base, id: "t3", cop: 3, opd: null },
    ]);
    const out = await collect(medmcqaAdapter().read(file, {}));
    expect((out[0] as ItemError).error.message).toContain("unlabelled");
    expect((out[1] as EvalItem).case.options).toEqual({ A: "a", B: "b", C: "c" });
    expect((out[1] as EvalItem).warnings?.[0]).toContain("option D");
    expect((out[2] as ItemError).error.message).toContain("option D is empty");
  });
});
