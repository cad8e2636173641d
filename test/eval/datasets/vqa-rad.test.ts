import { writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { type EvalItem, type ItemError, isItemError } from "../../../src/eval/datasets/types.js";
import { vqaRadAdapter } from "../../../src/eval/datasets/vqa-rad.js";
import { collect, readJsonl, useTempDir } from "./dataset-kit.js";

const SAMPLES = fileURLToPath(new URL("../../../test/fixtures/benchmark-samples/", import.meta.url));
const SAMPLE = path.join(SAMPLES, "vqa_rad.jsonl");
const IMAGES = path.join(SAMPLES, "images");

type Raw = Record<string, unknown>;
async function raw(): Promise<Raw[]> {
  return readJsonl<Raw>(SAMPLE);
}

const tmp = useTempDir("medmmv-vqarad-");

describe("VQA-RAD", () => {
  it("reads the sample with its shipped images, normalising closed answers", async () => {
    const records = await raw();
    const out = await collect(vqaRadAdapter().read(SAMPLE, { imagesDir: IMAGES }));
    expect(out.filter(isItemError)).toEqual([]);
    const got = out as EvalItem[];
    expect(got.map((i) => i.id)).toEqual(records.map((r) => String(r["qid"])));
    expect(got.map((i) => i.gold)).toEqual([
      { kind: "closed", text: "yes" },
      { kind: "closed", text: "yes" }, // "Yes" in the file
      { kind: "open", text: "soft tissue mass in the region of the terminal ileum with mesenteric lymphadenopathy" },
      { kind: "closed", text: "no" }, // "No" in the file
    ]);
    for (const [k, item] of got.entries()) {
      const r = records[k]!;
      expect(item.case.question).toBe(r["question"]);
      expect(item.case.options).toBeUndefined();
      expect(item.case.images).toEqual([{ id: r["image_name"], path: path.join(IMAGES, String(r["image_name"])) }]);
      expect(item.strata).toEqual({
        answer_type: r["answer_type"],
        image_organ: r["image_organ"],
        question_type: r["question_type"],
        images: "present",
      });
    }
  });

  it("reads the original JSON array layout like JSONL, trimming answer_type and stringifying integer answers", async () => {
    const records = await raw();
    const odd = [
      { ...records[0], qid: 9001, answer_type: "CLOSED ", answer: "Yes." },
      { ...records[2], qid: 9002, answer_type: "OPEN ", answer: 3 },
      { ...records[3], qid: 9003, answer_type: "CLOSED", answer: "left", question: "Which side is abnormal, left or right?" },
      { ...records[3], qid: 9004, answer_type: "", answer: "no" },
    ];
    const arrayFile = path.join(tmp(), "VQA_RAD Dataset Public.json");
    await writeFile(arrayFile, JSON.stringify(odd, null, 2));
    const jsonlFile = path.join(tmp(), "odd.jsonl");
    await writeFile(jsonlFile, odd.map((r) => JSON.stringify(r)).join("\n"));

    const fromArray = (await collect(vqaRadAdapter().read(arrayFile, { imagesDir: IMAGES }))) as EvalItem[];
    const fromJsonl = await collect(vqaRadAdapter().read(jsonlFile, { imagesDir: IMAGES }));
    expect(fromArray).toEqual(fromJsonl);
    expect(fromArray.map((i) => [i.id, i.strata["answer_type"], i.gold.kind, i.gold.text])).toEqual([
      ["9001", "CLOSED", "closed", "yes"],
      ["9002", "OPEN", "open", "3"],
      ["9003", "CLOSED", "closed", "left"],
      ["9004", "CLOSED", "closed", "no"],
    ]);
    expect(fromArray[3]!.warnings?.[0]).toContain("answer_type");
  });

  it("treats a missing image as an item error, or runs text-only when asked", async () => {
    const errs = await collect(vqaRadAdapter().read(SAMPLE, { imagesDir: tmp() }));
    expect(errs.every(isItemError)).toBe(true);
    expect((errs[0] as ItemError).error.message).toContain("synpic26764.jpg");
    expect((errs[0] as ItemError).error.message).toContain(tmp());

    const textOnly = (await collect(vqaRadAdapter().read(SAMPLE, { missingImages: "text-only" }))) as EvalItem[];
    expect(textOnly.filter(isItemError)).toEqual([]);
    expect(textOnly.every((i) => i.case.images === undefined && i.strata["images"] === "missing")).toBe(true);
    expect(textOnly[0]!.warnings?.[0]).toContain("--images");
  });

  it("refuses image names that escape the images folder", async () => {
    const [r] = await raw();
    const file = path.join(tmp(), "escape.jsonl");
    await writeFile(file, JSON.stringify({ ...r, image_name: "../images/synpic26764.jpg" }));
    const [out] = await collect(vqaRadAdapter().read(file, { imagesDir: IMAGES, missingImages: "text-only" }));
    expect(isItemError(out!)).toBe(true);
    expect((out as ItemError).error.message).toContain("inside the images folder");
  });
});
