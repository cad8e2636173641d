import { copyFile, mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { medxpertqaAdapter, stripAnswerChoices } from "../../../src/eval/datasets/medxpertqa.js";
import { type EvalItem, type ItemError, isItemError } from "../../../src/eval/datasets/types.js";
import { collect, readJsonl, useTempDir } from "./dataset-kit.js";

const SAMPLES = fileURLToPath(new URL("../../../test/fixtures/benchmark-samples/", import.meta.url));
const TEXT = path.join(SAMPLES, "medxpertqa_text.jsonl");
const MM = path.join(SAMPLES, "medxpertqa_mm.jsonl");

const items = (xs: (EvalItem | ItemError)[]) => xs.filter((x): x is EvalItem => !isItemError(x));
const errors = (xs: (EvalItem | ItemError)[]) => xs.filter(isItemError);

type Raw = { id: string; question: string; options: Record<string, string>; label: string; images?: string[] } & Record<string, unknown>;
async function raw(file: string): Promise<Raw[]> {
  return readJsonl<Raw>(file);
}

const tmp = useTempDir("medmmv-mxqa-");

describe("MedXpertQA Text (HF layout)", () => {
  it("reads every record with its label, 10 options and strata", async () => {
    const records = await raw(TEXT);
    const out = await collect(medxpertqaAdapter().read(TEXT, {}));
    expect(errors(out)).toEqual([]);
    const got = items(out);
    expect(got.map((i) => i.id)).toEqual(records.map((r) => r.id));
    for (const [k, item] of got.entries()) {
      const r = records[k]!;
      expect(Object.keys(item.case.options ?? {})).toEqual(["A", "B", "C", "D", "E", "F", "G", "H", "I", "J"]);
      expect(item.gold).toEqual({ kind: "choice", option: r.label, text: r.options[r.label] });
      expect(item.strata).toEqual({
        body_system: r["body_system"],
        medical_task: r["medical_task"],
        question_type: r["question_type"],
        subset: "Text",
      });
      expect(item.case.images).toBeUndefined();
      expect(item.warnings).toBeUndefined();
    }
    expect(got[0]!.gold).toEqual({ kind: "choice", option: "F", text: "Olfactory hallucinations" });
  });

  it("strips the trailing Answer Choices block and keeps the vignette intact", async () => {
    const records = await raw(TEXT);
    const got = items(await collect(medxpertqaAdapter().read(TEXT, {})));
    for (const [k, item] of got.entries()) {
      const q = records[k]!.question;
      expect(q).toContain("\nAnswer Choices: (A)");
      expect(item.case.question).not.toContain("Answer Choices");
      expect(item.case.question).toBe(q.slice(0, q.indexOf("\nAnswer Choices:")).trimEnd());
    }
    expect(got[0]!.case.question.endsWith("support a diagnosis of alcohol withdrawal?")).toBe(true);
  });
});

describe("MedXpertQA MM (HF layout)", () => {
  it("keeps text between the vignette and the choices (\"Image One\")", async () => {
    const got = items(await collect(medxpertqaAdapter().read(MM, { missingImages: "text-only" })));
    const mm1556 = got.find((i) => i.id === "MM-1556")!;
    expect(mm1556.case.question.endsWith("cells?  \n\nImage One")).toBe(true);
    expect(Object.keys(mm1556.case.options ?? {})).toEqual(["A", "B", "C", "D", "E"]);
  });

  it("turns missing images into item errors naming the file and the folder", async () => {
    const noDir = await collect(medxpertqaAdapter().read(MM, {}));
    expect(items(noDir)).toEqual([]);
    expect(errors(noDir).map((e) => e.id)).toEqual(["MM-1524", "MM-1556", "MM-1905", "MM-1980"]);
    expect(errors(noDir)[0]!.error.code).toBe("INVALID_INPUT");
    expect(errors(noDir)[0]!.error.message).toContain("MM-1524-a.jpeg");
    expect(errors(noDir)[0]!.error.message).toContain("--images");

    const withDir = await collect(medxpertqaAdapter().read(MM, { imagesDir: tmp(), missingImages: "error" }));
    expect(errors(withDir)).toHaveLength(4);
    expect(errors(withDir)[1]!.error.message).toContain("MM-1556-a.jpeg");
    expect(errors(withDir)[1]!.error.message).toContain(tmp());
  });

  it("runs text-only when asked, with a warning and an images stratum", async () => {
    const got = await collect(medxpertqaAdapter().read(MM, { imagesDir: tmp(), missingImages: "text-only" }));
    expect(errors(got)).toEqual([]);
    for (const item of items(got)) {
      expect(item.case.images).toBeUndefined();
      expect(item.strata["images"]).toBe("missing");
      expect(item.warnings?.join(" ")).toMatch(/images missing.*text-only/);
    }
  });

  it("resolves images that are present to absolute paths", async () => {
    const dir = path.join(tmp(), "present");
    await mkdir(dir, { recursive: true });
    await copyFile(path.join(SAMPLES, "images", "synpic676.jpg"), path.join(dir, "MM-1524-a.jpeg"));
    await copyFile(path.join(SAMPLES, "images", "synpic38531.jpg"), path.join(dir, "MM-1524-b.jpeg"));
    const got = await collect(medxpertqaAdapter().read(MM, { imagesDir: dir }));
    const first = got[0] as EvalItem;
    expect(isItemError(first)).toBe(false);
    expect(first.case.images).toEqual([
      { id: "MM-1524-a.jpeg", path: path.join(dir, "MM-1524-a.jpeg") },
      { id: "MM-1524-b.jpeg", path: path.join(dir, "MM-1524-b.jpeg") },
    ]);
    expect(first.strata).toMatchObject({ images: "present", subset: "MM", body_system: "Nervous" });
    // The other three still lack their images.
    expect(errors(got).map((e) => e.id)).toEqual(["MM-1556", "MM-1905", "MM-1980"]);
  });
});

describe("MedXpertQA official eval layout", () => {
  it("reads [{letter, content}] options, [label] and [{image_path}] like the HF layout", async () => {
    const records = await raw(MM);
    const official = records.map((r) => ({
      ...r,
      options: Object.entries(r.options).map(([letter, content]) => ({ letter, content })),
      label: [r.label],
      images: (r.images ?? []).map((image_path) => ({ image_path })),
    }));
    const file = path.join(tmp(), "official.jsonl");
    await writeFile(file, official.map((r) => JSON.stringify(r)).join("\n") + "\n");
    const opts = { missingImages: "text-only" as const };
    const fromOfficial = await collect(medxpertqaAdapter().read(file, opts));
    const fromHf = await collect(medxpertqaAdapter().read(MM, opts));
    expect(fromOfficial).toEqual(fromHf);
    expect(items(fromOfficial)[0]!.gold).toEqual({ kind: "choice", option: "E", text: "Ulnar" });
  });

  it("finds an image_path with a folder prefix by its bare name too", async () => {
    const dir = path.join(tmp(), "flat");
    await mkdir(dir, { recursive: true });
    await copyFile(path.join(SAMPLES, "images", "synpic676.jpg"), path.join(dir, "MM-1905-a.jpeg"));
    const [r] = (await raw(MM)).filter((x) => x.id === "MM-1905");
    const file = path.join(tmp(), "prefixed.jsonl");
    await writeFile(file, JSON.stringify({ ...r, label: [r!.label], images: [{ image_path: "images/MM-1905-a.jpeg" }] }));
    const [item] = await collect(medxpertqaAdapter().read(file, { imagesDir: dir }));
    expect(isItemError(item!)).toBe(false);
    expect((item as EvalItem).case.images?.[0]?.path).toBe(path.join(dir, "MM-1905-a.jpeg"));
  });
});

describe("MedXpertQA bad records", () => {
  it("reports a bad line, a label outside the options and duplicate ids, and goes on", async () => {
    const [r] = await raw(TEXT);
    const file = path.join(tmp(), "bad.jsonl");
    await writeFile(
      file,
      [
        JSON.stringify(r),
        "{not json",
        JSON.stringify({ ...r, id: "Text-x", label: "Z" }),
        JSON.stringify(r),
        "",
      ].join("\n"),
    );
    const out = await collect(medxpertqaAdapter().read(file, {}));
    expect(out.map((x) => x.id)).toEqual(["Text-2393", "medxpertqa-1", "Text-x", "Text-2393~2"]);
    expect(isItemError(out[1]!)).toBe(true);
    expect((out[2] as ItemError).error.message).toContain('label "Z"');
    expect((out[3] as EvalItem).warnings?.[0]).toContain("repeats");
  });
});

describe("stripAnswerChoices", () => {
  const options = { A: "Median", B: "Ulnar" };
  it("leaves a question without a trailing choices block alone", () => {
    const q = "The note says Answer Choices: were discussed.\nWhat next?";
    expect(stripAnswerChoices(q, options)).toEqual({ question: q, stripped: false, consistent: true });
  });
  it("flags a block that lists different options", () => {
    const r = stripAnswerChoices("Which nerve?\nAnswer Choices: (A) Median (B) Radial", options);
    expect(r).toEqual({ question: "Which nerve?", stripped: true, consistent: false });
  });
});
