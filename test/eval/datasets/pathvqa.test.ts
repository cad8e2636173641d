import { copyFile, mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { pathvqaAdapter } from "../../../src/eval/datasets/pathvqa.js";
import { type EvalItem, type ItemError, isItemError } from "../../../src/eval/datasets/types.js";
import { collect, readJsonl, useTempDir } from "./dataset-kit.js";

const SAMPLES = fileURLToPath(new URL("../../../test/fixtures/benchmark-samples/", import.meta.url));
const SAMPLE = path.join(SAMPLES, "pathvqa_test_lxmert.jsonl");

type Raw = { img_id: string; labelf: { pvqa: Record<string, number>[] }; sentf: { pvqa: string[] } };
async function raw(): Promise<Raw[]> {
  return readJsonl<Raw>(SAMPLE);
}

const tmp = useTempDir("medmmv-pathvqa-");

describe("PathVQA (LXMERT json)", () => {
  it("expands each image record into question/answer items paired by position", async () => {
    const records = await raw();
    const out = (await collect(pathvqaAdapter().read(SAMPLE, { missingImages: "text-only" }))) as EvalItem[];
    expect(out.filter(isItemError)).toEqual([]);
    const expected = records.flatMap((r) =>
      r.sentf.pvqa.map((q, i) => ({ id: `${r.img_id}#${i}`, question: q.trim(), answer: Object.keys(r.labelf.pvqa[i]!)[0]! })),
    );
    expect(out.map((i) => i.id)).toEqual(expected.map((e) => e.id));
    for (const [k, item] of out.entries()) {
      const e = expected[k]!;
      expect(item.case.question).toBe(e.question);
      const yesNo = e.answer === "yes" || e.answer === "no";
      expect(item.gold).toEqual(yesNo ? { kind: "closed", text: e.answer } : { kind: "open", text: e.answer });
      expect(item.strata).toEqual({ answer_type: yesNo ? "CLOSED" : "OPEN", images: "missing" });
      expect(item.case.id).toBe(e.id.replace("#", "_"));
    }
    // Spot-check the pairing: question 1 of test_0875 is a yes/no question answered "yes".
    expect(out[1]!.case.question.startsWith("Does this image show heart")).toBe(true);
    expect(out[1]!.gold).toEqual({ kind: "closed", text: "yes" });
    expect(out[5]!.gold).toEqual({ kind: "open", text: "Cardiovascular" });
  });

  it("reports every question of an image whose file is not there", async () => {
    const out = await collect(pathvqaAdapter().read(SAMPLE, { imagesDir: tmp() }));
    expect(out).toHaveLength(12);
    expect(out.every(isItemError)).toBe(true);
    expect(out[0]!.id).toBe("test_0875#0");
    expect((out[0] as ItemError).error.message).toContain("test_0875.jpg");
  });

  it("finds images at the top of --images or in its split sub-folder", async () => {
    await mkdir(path.join(tmp(), "test"), { recursive: true });
    await copyFile(path.join(SAMPLES, "images", "synpic676.jpg"), path.join(tmp(), "test_0875.jpg"));
    await copyFile(path.join(SAMPLES, "images", "synpic676.jpg"), path.join(tmp(), "test", "test_0878.jpg"));
    const out = (await collect(pathvqaAdapter().read(SAMPLE, { imagesDir: tmp() }))) as EvalItem[];
    expect(out.filter(isItemError)).toEqual([]);
    expect(out[0]!.case.images).toEqual([{ id: "test_0875.jpg", path: path.join(tmp(), "test_0875.jpg") }]);
    expect(out[6]!.case.images).toEqual([{ id: "test_0878.jpg", path: path.join(tmp(), "test", "test_0878.jpg") }]);
  });

  it("reads the official JSON array file and flags unpaired questions", async () => {
    const records = await raw();
    const uneven = { ...records[0]!, img_id: "test_0001", sentf: { pvqa: ["Q0?", "Q1?", "Q2?"] }, labelf: { pvqa: [{ no: 1 }, {}] } };
    const file = path.join(tmp(), "test.json");
    await writeFile(file, JSON.stringify([records[1], uneven]));
    const out = await collect(pathvqaAdapter().read(file, { missingImages: "text-only" }));
    expect(out.map((x) => x.id)).toEqual([0, 1, 2, 3, 4, 5].map((i) => `test_0878#${i}`).concat(["test_0001#0", "test_0001#1", "test_0001#2"]));
    expect((out[6] as EvalItem).gold).toEqual({ kind: "closed", text: "no" });
    expect((out[7] as ItemError).error.message).toContain("no answer");
    expect((out[8] as ItemError).error.message).toContain("3 questions but 2 answers");
  });
});
