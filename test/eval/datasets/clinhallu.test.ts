import { writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { getAdapter, isItemError, type EvalItem } from "../../../src/eval/datasets/index.js";
import { collect, onlyItems, useTempDir } from "./dataset-kit.js";

const DIR = fileURLToPath(new URL("../../../examples/clinhallu/", import.meta.url));
const GOLD = path.join(DIR, "gold_cot.jsonl");
const TRACES = path.join(DIR, "model_cot.jsonl");
const IMAGES = path.join(DIR, "images");
const tmp = useTempDir("medmmv-clinhallu-");

const byId = (xs: EvalItem[]) => new Map(xs.map((x) => [x.id, x]));

describe("clinhallu adapter (gold_cot.jsonl)", () => {
  it("reads every record with ClinHallu's sample ids, gold answers and reference traces", async () => {
    const items = byId(onlyItems(await collect(getAdapter("clinhallu").read(GOLD, { imagesDir: IMAGES }))));
    expect([...items.keys()]).toEqual(["source_id:SYN-MM-1", "original_index:0", "original_index:1", "source_id:SYN-Text-2"]);
    const mc = items.get("source_id:SYN-MM-1")!;
    expect(mc.gold).toEqual({ kind: "choice", option: "C", text: "Lung cancer" });
    expect(mc.case.options).toEqual({ A: "Pneumonia", B: "Tuberculosis", C: "Lung cancer", D: "Sarcoidosis" });
    expect(mc.case.images?.map((i) => i.id)).toEqual(["synthetic_chest_01.png"]);
    expect(mc.stagewise?.reference).toEqual({
      visual: "A spiculated mass sits in the right upper lobe without cavitation.",
      knowledge: "Spiculated lung masses in older smokers are most often primary lung carcinoma.",
      reasoning: "A spiculated solitary mass in a heavy smoker points to malignancy over infection.",
      answer: "C. Lung cancer",
    });
    expect(mc.strata).toMatchObject({ question_type: "multiple_choice", body_system: "Respiratory", images: "present" });
    expect(items.get("original_index:0")!.gold).toEqual({ kind: "closed", text: "yes" });
    expect(items.get("original_index:1")!.gold).toEqual({ kind: "open", text: "glands" });
    // An image given as an object with image_path.
    expect(items.get("original_index:1")!.case.images?.map((i) => i.id)).toEqual(["synthetic_path_03.png"]);
    expect(items.get("source_id:SYN-Text-2")!.case.images).toBeUndefined();
  });

  it("missing images follow --missing-images", async () => {
    const strict = await collect(getAdapter("clinhallu").read(GOLD, {}));
    expect(strict.filter(isItemError).map((e) => e.id)).toEqual(["source_id:SYN-MM-1", "original_index:0", "original_index:1"]);
    const textOnly = onlyItems(await collect(getAdapter("clinhallu").read(GOLD, { missingImages: "text-only" })));
    expect(textOnly[0]!.strata["images"]).toBe("missing");
    expect(textOnly[0]!.warnings?.join(" ")).toMatch(/run text-only/);
  });

  it("strict about what it needs, tolerant of extra fields", async () => {
    const f = path.join(tmp(), "bad.jsonl");
    const rows = [
      { question: "q1?", answer: "yes", question_type: "yes_no", original_index: 5, extra: { any: 1 } },
      { question: "q2?", answer: "C. x", question_type: "multiple_choice", source_id: "S2", options: ["A. a", "B. b"], answer_letter: "C" },
      { question: "q3?", answer: "C. x", question_type: "multiple_choice", source_id: "S3", options: ["a", "b"] },
      { question: "q4?", answer: "x", question_type: "free", source_id: "S4" },
      { answer: "x", question_type: "open_ended", source_id: "S5" },
      { question: "q6?", answer: "no", question_type: "yes_no", gold_cot: "not an object", source_id: "S6" },
      { question: "q7?", answer: "B. b", question_type: "multiple_choice", options: ["A. a", "B. b"], gold_cot: { visual_recognition: { text: "v v v" }, reasoning: { text: "r r r", answer: "B. b" } } },
    ];
    await writeFile(f, rows.map((r) => JSON.stringify(r)).join("\n") + "\nnot json\n");
    const out = await collect(getAdapter("clinhallu").read(f, {}));
    const ok = out.filter((x): x is EvalItem => !isItemError(x));
    expect(ok.map((x) => x.id)).toEqual(["original_index:5", "original_index:6"]);
    // No gold_cot: usable for accuracy, flagged; MC letter from "B. b" when answer_letter is absent.
    expect(ok[0]!.stagewise?.reference).toBeNull();
    expect(ok[1]!.gold).toEqual({ kind: "choice", option: "B", text: "b" });
    expect(ok[1]!.warnings?.join(" ")).toMatch(/identified by its position/);
    expect(ok[1]!.stagewise?.reference).toEqual({ visual: "v v v", knowledge: "", reasoning: "r r r", answer: "B. b" });
    expect(ok[1]!.warnings?.join(" ")).toMatch(/gold_cot has no text for \[Knowledge Recall\]/);
    const errs = out.filter(isItemError).map((e) => e.error.message);
    expect(errs).toHaveLength(6);
    expect(errs.join("\n")).toMatch(/answer_letter "C" is not one of the options A, B/);
    expect(errs.join("\n")).toMatch(/needs `options`/);
    expect(errs.join("\n")).toMatch(/question_type "free"/);
    expect(errs.join("\n")).toMatch(/lacks a question/);
    expect(errs.join("\n")).toMatch(/gold_cot is not an object/);
    expect(errs.join("\n")).toMatch(/not valid JSON/);
  });
});

describe("--traces model_cot.jsonl", () => {
  it("attaches each sample's trace, parsed by ClinHallu's rules with its traps", async () => {
    const adapter = getAdapter("clinhallu");
    const items = byId(onlyItems(await collect(adapter.read(GOLD, { imagesDir: IMAGES, tracesFile: TRACES }))));
    const mm = items.get("source_id:SYN-MM-1")!.stagewise!.external!;
    // Repeated header: the later [Visual Recognition] wins; the preamble is ignored; MC answered as a bare letter.
    expect(mm.stages.visual).toBe("A spiculated mass in the right upper lobe.");
    expect(mm.stages.answer).toBe("C");
    expect(mm.valid).toBe(true);
    // **[Reasoning]** and the answer on the next line.
    const yn = items.get("original_index:0")!.stagewise!.external!;
    expect(yn.stages.answer).toBe("yes");
    expect(yn.stages.reasoning.startsWith("**")).toBe(true);
    // Missing stage → invalid, with ClinHallu's reason.
    const open = items.get("original_index:1")!.stagewise!.external!;
    expect(open).toMatchObject({ valid: false, validation: "Missing required step: [Knowledge Recall]" });
    expect(open.stages.knowledge).toBe("");
    // "letter. text".
    expect(items.get("source_id:SYN-Text-2")!.stagewise!.external!.stages.answer).toBe("B. Vitamin C");
    expect(adapter.describe?.()).toMatchObject({ traceRecords: 4, itemsWithoutTrace: 0, itemsWithoutReference: 0 });
  });

  it("a sample the traces file lacks gets null; a file with no record is refused", async () => {
    const f = path.join(tmp(), "one-trace.jsonl");
    await writeFile(f, JSON.stringify({ source_id: "SYN-Text-2", generation_status: "api_failed", cot_valid: false }) + "\n");
    const adapter = getAdapter("clinhallu");
    const items = byId(onlyItems(await collect(adapter.read(GOLD, { imagesDir: IMAGES, tracesFile: f }))));
    expect(items.get("source_id:SYN-MM-1")!.stagewise!.external).toBeNull();
    expect(items.get("source_id:SYN-Text-2")!.stagewise!.external).toMatchObject({ valid: false, validation: "no trace (api_failed)" });
    expect(adapter.describe?.()).toMatchObject({ itemsWithoutTrace: 3 });
    const empty = path.join(tmp(), "empty.jsonl");
    await writeFile(empty, "\n");
    await expect(collect(getAdapter("clinhallu").read(GOLD, { imagesDir: IMAGES, tracesFile: empty }))).rejects.toThrow(/no readable model_cot/);
    await expect(collect(getAdapter("clinhallu").read(GOLD, { tracesFile: path.join(tmp(), "absent.jsonl") }))).rejects.toThrow(/^--traces: cannot read dataset file .*absent\.jsonl \(ENOENT\)$/);
  });
});
