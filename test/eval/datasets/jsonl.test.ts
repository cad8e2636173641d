import { copyFile, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jsonlAdapter } from "../../../src/eval/datasets/jsonl.js";
import { type EvalItem, type ItemError, isItemError } from "../../../src/eval/datasets/types.js";
import { collect } from "./dataset-kit.js";

const IMAGES = fileURLToPath(new URL("../../../test/fixtures/benchmark-samples/images/", import.meta.url));


let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(path.join(tmpdir(), "medmmv-jsonl-"));
  await mkdir(path.join(tmp, "img"));
  await copyFile(path.join(IMAGES, "synpic676.jpg"), path.join(tmp, "img", "a.jpg"));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

async function fixture(name: string, records: unknown[]): Promise<string> {
  const file = path.join(tmp, name);
  await writeFile(file, records.map((r) => JSON.stringify(r)).join("\n") + "\n");
  return file;
}

describe("generic jsonl adapter", () => {
  it("reads the default fields and infers the answer kind", async () => {
    const file = await fixture("default.jsonl", [
      { id: "q1", question: "Which nerve?", options: { A: "Median", B: "Ulnar" }, answer: "B" },
      { id: "q2", question: "Which nerve?", options: { A: "Median", B: "Ulnar" }, answer: "(a)" },
      { id: "q3", question: "Which nerve?", options: { A: "Median", B: "Ulnar" }, answer: "ulnar" },
      { id: "q4", question: "Is there effusion?", answer: "No." },
      { id: "q5", question: "Which organ?", answer: "Liver", notes: "CT abdomen", images: ["img/a.jpg"] },
      { question: "No id?", answer: "yes" },
    ]);
    const out = (await collect(jsonlAdapter().read(file, {}))) as EvalItem[];
    expect(out.filter(isItemError)).toEqual([]);
    expect(out.map((i) => [i.id, i.gold])).toEqual([
      ["q1", { kind: "choice", option: "B", text: "Ulnar" }],
      ["q2", { kind: "choice", option: "A", text: "Median" }],
      ["q3", { kind: "choice", option: "B", text: "Ulnar" }],
      ["q4", { kind: "closed", text: "no" }],
      ["q5", { kind: "open", text: "Liver" }],
      ["jsonl-5", { kind: "closed", text: "yes" }],
    ]);
    // Image names resolve against the file's folder when --images is not given.
    expect(out[4]!.case).toMatchObject({ notes: "CT abdomen", images: [{ id: "a.jpg", path: path.join(tmp, "img", "a.jpg") }] });
    expect(out[4]!.strata).toEqual({ images: "present" });
    expect(out[3]!.case.options).toBeUndefined();
  });

  it("follows a field map: list options with letter prefixes, dotted paths, strata, explicit kind", async () => {
    const file = await fixture("mapped.jsonl", [
      {
        question_id: "mf-1",
        q: "Which finding?",
        opts: ["A. Pneumothorax", "B. Effusion", "C. Normal"],
        correct_answer: "B",
        meta: { system: "Respiratory", organ: "lung" },
        files: [{ path: "img/a.jpg" }],
      },
      { question_id: "mf-2", q: "Is this axial?", correct_answer: "axial", kind: "closed", meta: { system: "Nervous" } },
    ]);
    const out = (await collect(
      jsonlAdapter().read(file, {
        imagesDir: tmp,
        fieldMap: { id: "question_id", question: "q", options: "opts", answer: "correct_answer", answerKind: "kind", images: "files", strata: ["meta.system", "meta.organ"] },
      }),
    )) as EvalItem[];
    expect(out.filter(isItemError)).toEqual([]);
    expect(out[0]!.case.options).toEqual({ A: "Pneumothorax", B: "Effusion", C: "Normal" });
    expect(out[0]!.gold).toEqual({ kind: "choice", option: "B", text: "Effusion" });
    expect(out[0]!.strata).toEqual({ "meta.system": "Respiratory", "meta.organ": "lung", images: "present" });
    expect(out[1]!.gold).toEqual({ kind: "closed", text: "axial" });
    expect(out[1]!.strata).toEqual({ "meta.system": "Nervous" });
  });

  it("reports unusable records as item errors and de-duplicates ids", async () => {
    const file = await fixture("bad.jsonl", [
      { id: "x", question: "Q?", options: { A: "a", B: "b" }, answer: "Z" },
      { id: "y", question: "Q?" },
      { id: "z", question: "Q?", answer: "a", answer_kind: "multiple" },
      { id: "w", question: "Q?", answer: "a", images: ["missing.jpg"] },
      { id: "dup", question: "Q?", answer: "yes" },
      { id: "dup", question: "Q?", answer: "no" },
      { id: "bad-key", question: "Q?", options: { AA: "a" }, answer: "a", answer_kind: "open" },
    ]);
    const out = await collect(jsonlAdapter().read(file, {}));
    expect(out.map((x) => [x.id, isItemError(x)])).toEqual([
      ["x", true],
      ["y", true],
      ["z", true],
      ["w", true],
      ["dup", false],
      ["dup~2", false],
      ["bad-key", true],
    ]);
    expect((out[0] as ItemError).error.message).toContain("names none of the options");
    expect((out[1] as ItemError).error.message).toContain("field map");
    expect((out[3] as ItemError).error.message).toContain("missing.jpg");
    expect((out[5] as EvalItem).warnings?.[0]).toContain('"dup~2"');
    expect((out[6] as ItemError).error.message).toContain("options");
  });
});
