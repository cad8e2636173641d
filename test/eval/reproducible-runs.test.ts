import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useScriptedServers } from "../support/scripted-servers-fixture.js";
import type { ScriptFn } from "../../src/scripted/scripted-openai-server.js";
import { runEval, type EvalRunOptions } from "../../src/eval/runner.js";
import { readResults, type ResultRecord } from "../../src/eval/results-file.js";
import { readManifest } from "../../src/eval/manifest.js";
import { predictionOf } from "../../src/eval/prediction.js";
import { CallCollector } from "../../src/eval/call-log.js";
import { AIMessage } from "@langchain/core/messages";
import { summaryMarkdown } from "../../src/eval/report.js";
import { progressText } from "../../src/eval/progress.js";
import { confidenceSections } from "../../src/eval/confidence-report.js";
import { abstentionFigures, confidenceFigures } from "../../src/eval/record-stats.js";
import { answerByItem, evalScenario, fakeImages, readItems, resultRecord, SAMPLES, type Verdict } from "./eval-fixtures.js";
import { officialSetCorrectness } from "./medxpertqa-official.js";

const servers = useScriptedServers({ scenario: evalScenario({}) });
let tmp: string;
let images: string;
const MM = path.join(SAMPLES, "medxpertqa_mm.jsonl");
const TEXT = path.join(SAMPLES, "medxpertqa_text.jsonl");

beforeAll(async () => {
  tmp = await mkdtemp(path.join(tmpdir(), "medmmv-repro-"));
  images = path.join(tmp, "images");
  const names = (await readFile(MM, "utf8")).split("\n").filter(Boolean).flatMap((l) => (JSON.parse(l) as { images: string[] }).images);
  await fakeImages(images, names);
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

let outCount = 0;
const freshOut = () => path.join(tmp, `out-${++outCount}`);

async function run(opts: Partial<EvalRunOptions> & Pick<EvalRunOptions, "dataset" | "input">, env: Record<string, string> = {}) {
  return runEval({ out: freshOut(), concurrency: 4, ...opts }, { config: servers.config({ MEDMMV_LLM_BACKOFF_BASE_MS: "5", ...env }), progress: null });
}

/**
 * MM items: MM-1524 answered right, MM-1556 wrong, and the two keyed B answered B by every path
 * while the detector keeps flagging them HIGH after every repair: MedMMV abstains on them, and
 * their records still hold the path's letter — the right one — in `answer.option`.
 */
async function mmScenario(): Promise<void> {
  const items = await readItems("medxpertqa", MM, { imagesDir: images });
  const verdicts: Record<string, Verdict> = { "MM-1524": "gold", "MM-1556": "wrong" };
  const base = evalScenario({ answerFor: answerByItem(items, (it) => verdicts[it.id] ?? "gold"), repairsNeeded: { B: 99 } });
  const hd = base.agents["hd-supervisor"] as ScriptFn;
  servers.model.setScenario({
    ...base,
    agents: {
      ...base.agents,
      "hd-supervisor": (req) => {
        const out = hd(req) as { hallucinationDetected: boolean };
        return out.hallucinationDetected ? { ...out, severity: "HIGH" } : out;
      },
    },
  });
}

describe("an explicit prediction, scored by MedXpertQA's own set_correctness", () => {
  it("abstained and failed records predict null; the official scorer over `prediction` gives the summary's accuracy", async () => {
    await mmScenario();
    const r = await run({ dataset: "medxpertqa", input: MM, images, method: "medmmv" });
    const { records } = await readResults(path.join(r.dir, "results.jsonl"));
    expect(records).toHaveLength(4);
    const abstained = records.filter((x) => x.status === "abstained");
    expect(abstained.length).toBeGreaterThan(0);
    for (const x of abstained) expect(x.prediction).toBeNull();
    for (const x of records.filter((y) => y.status === "completed")) expect(x.prediction).toMatch(/^[A-E]$/);
    // Their output layout: `label` and `prediction` are lists; an empty prediction is wrong.
    const official = records.map((x: ResultRecord) => officialSetCorrectness([x.gold.option!], x.prediction === null || x.prediction === undefined ? [] : [x.prediction]));
    const accuracy = official.filter(Boolean).length / official.length;
    expect(accuracy).toBe(r.summary.accuracy);
    expect(accuracy).toBe(0.25);
    expect(records.every((x) => x.correct === official[records.indexOf(x)])).toBe(true);
    // The abstentions hold the right letter in `answer.option`: scored from it, they would count as answers.
    expect(abstained.map((x) => [x.id, x.answer?.option]).sort()).toEqual([["MM-1905", "B"], ["MM-1980", "B"]]);
    const fromOption = records.filter((x) => officialSetCorrectness([x.gold.option!], x.answer?.option ? [x.answer.option] : [])).length / records.length;
    expect(fromOption).toBe(0.75);
  });
});

describe("predictionOf", () => {
  const gold = { kind: "choice" as const, option: "B", text: "Radial nerve" };
  const options = { A: "Ulnar nerve", B: "Radial nerve" };
  it("null for an abstained record even when its path named a letter, and for a failed one", () => {
    expect(predictionOf("abstained", { option: "B", text: "Radial nerve" }, gold, options)).toBeNull();
    expect(predictionOf("failed", null, gold, options)).toBeNull();
  });
  it("the letter of a completed answer; an option's text without a letter predicts that option; open answers predict their text", () => {
    expect(predictionOf("completed", { option: " b ", text: "x" }, gold, options)).toBe("B");
    expect(predictionOf("completed", { option: null, text: "radial  nerve." }, gold, options)).toBe("B");
    expect(predictionOf("completed", { option: null, text: "something else" }, gold, options)).toBe("something else");
    expect(predictionOf("completed", { option: null, text: "pancreas" }, { kind: "open", text: "pancreas" })).toBe("pancreas");
  });
});

describe("a run pins its inputs", () => {
  it("the manifest holds the input file's hash and size and the product's version and commit; --resume with a changed file refuses naming both hashes", async () => {
    servers.model.setScenario(evalScenario({ answerFor: answerByItem(await readItems("medxpertqa", TEXT), () => "gold") }));
    const input = path.join(tmp, "text-copy.jsonl");
    const original = await readFile(TEXT, "utf8");
    await writeFile(input, original);
    const first = await run({ dataset: "medxpertqa", input, method: "cot" });
    const m = (await readManifest(first.dir))!;
    expect(m.inputFile).toEqual({ sha256: expect.stringMatching(/^[0-9a-f]{64}$/), bytes: Buffer.byteLength(original) });
    expect(m.product).toMatchObject({ version: expect.any(String), sourceHash: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(m.product!.commit === null || /^[0-9a-f]{40}$/.test(m.product!.commit)).toBe(true);

    const before = m.inputFile!.sha256;
    // The summary carries them too, for whoever reads only summary.json or summary.md.
    expect(first.summary).toMatchObject({ dataset: { inputFile: m.inputFile }, product: m.product });
    expect(summaryMarkdown(first.summary)).toContain(`- input file: sha256 ${before}, ${m.inputFile!.bytes} bytes`);
    await writeFile(input, original.split("\n").slice(0, 2).join("\n") + "\n");
    const err = await runEval({ dataset: "medxpertqa", input, method: "cot", out: first.dir, resume: true }, { config: servers.config(), progress: null }).catch((e: unknown) => e as Error);
    expect(err).toMatchObject({ code: "CONFLICT" });
    const after = (await import("../../src/eval/input-pins.js")).pinInput(input);
    expect((err as Error).message).toContain(before);
    expect((err as Error).message).toContain((await after).sha256);
    // The folder is untouched: still the first run's four records.
    expect((await readResults(path.join(first.dir, "results.jsonl"))).records).toHaveLength(4);
  });

  it("--resume on other code keeps the first product and adds the later one; the same code adds nothing", async () => {
    servers.model.setScenario(evalScenario({ answerFor: answerByItem(await readItems("medxpertqa", TEXT), () => "gold") }));
    const first = await run({ dataset: "medxpertqa", input: TEXT, method: "cot", limit: 2 });
    const m = (await readManifest(first.dir))!;
    // The folder's first session as if another build had run it (its sources hashed otherwise).
    const earlier = { ...m.product!, sourceHash: "0".repeat(64), commit: null };
    await writeFile(path.join(first.dir, "eval.json"), JSON.stringify({ ...m, product: earlier }, null, 2));
    const resumed = await runEval({ dataset: "medxpertqa", input: TEXT, method: "cot", out: first.dir, resume: true }, { config: servers.config({ MEDMMV_LLM_BACKOFF_BASE_MS: "5" }), progress: null });
    const after = (await readManifest(first.dir))!;
    expect(after.product).toEqual(earlier);
    expect(after.resumedWith).toEqual([m.product]);
    expect(resumed.summary).toMatchObject({ product: earlier, resumedWith: [m.product] });
    expect(summaryMarkdown(resumed.summary)).toContain(`- resumed under other code: medmmv ${m.product!.version}`);
    // Once more on the same code: the history does not grow.
    await runEval({ dataset: "medxpertqa", input: TEXT, method: "cot", out: first.dir, resume: true }, { config: servers.config({ MEDMMV_LLM_BACKOFF_BASE_MS: "5" }), progress: null });
    expect((await readManifest(first.dir))!.resumedWith).toEqual([m.product]);
  });

  it("a run refused before its first item (images asked for, none given) leaves its --out folder unclaimed", async () => {
    const out = freshOut();
    await expect(runEval({ dataset: "medxpertqa", input: MM, method: "cot", out }, { config: servers.config(), progress: null })).rejects.toMatchObject({ code: "INVALID_INPUT", message: expect.stringMatching(/no images folder was given/) });
    expect(await readManifest(out)).toBeNull();
  });
});

describe("--replay-cache DIR reads DIR", () => {
  it("a run recorded with --cache all replays from its folder alone (no store): no model call, the same figures", async () => {
    await mmScenario();
    const recorded = await run({ dataset: "medxpertqa", input: MM, images, method: "medmmv", runs: 2 }, { MEDMMV_CACHE: "all" });
    const calls = servers.model.stats().total;
    const replayed = await run({ dataset: "medxpertqa", input: MM, images, method: "medmmv", runs: 2, replayCache: recorded.dir }, { MEDMMV_CACHE: "all" });
    expect(servers.model.stats().total).toBe(calls);
    expect(replayed.summary.accuracy).toBe(recorded.summary.accuracy);
    expect(replayed.summary.accuracyByRun.map((x) => x.accuracy)).toEqual(recorded.summary.accuracyByRun.map((x) => x.accuracy));
    expect(replayed.summary.abstained).toBe(recorded.summary.abstained);
    const a = (await readResults(path.join(recorded.dir, "results.jsonl"))).records.map((x) => [x.id, x.run, x.prediction]);
    const b = (await readResults(path.join(replayed.dir, "results.jsonl"))).records.map((x) => [x.id, x.run, x.prediction]);
    expect(new Set(b.map((x) => JSON.stringify(x)))).toEqual(new Set(a.map((x) => JSON.stringify(x))));
  });

  it("a call the folder lacks stops the run without asking the model (unless --replay-cache-then-call)", async () => {
    await mmScenario();
    // Recorded with the deterministic cache: the sampled rollouts were not kept.
    const recorded = await run({ dataset: "medxpertqa", input: MM, images, method: "medmmv" }, { MEDMMV_CACHE: "deterministic" });
    const calls = servers.model.stats().total;
    await expect(run({ dataset: "medxpertqa", input: MM, images, method: "medmmv", replayCache: recorded.dir })).rejects.toMatchObject({ code: "NOT_FOUND", message: expect.stringMatching(/missing from .*responses\.jsonl.*--replay-cache-then-call/) });
    expect(servers.model.stats().total).toBe(calls);
    const topped = await run({ dataset: "medxpertqa", input: MM, images, method: "medmmv", replayCache: recorded.dir, replayThenCall: true });
    expect(servers.model.stats().total).toBeGreaterThan(calls);
    expect(topped.summary.accuracy).toBe(recorded.summary.accuracy);
  });
});

describe("subsets over the dataset's own fields", () => {
  it("--where keeps only matching items, with --stratify over the same field", async () => {
    servers.model.setScenario(evalScenario({ answerFor: answerByItem(await readItems("medxpertqa", TEXT), () => "gold") }));
    const r = await run({ dataset: "medxpertqa", input: TEXT, method: "cot", where: { body_system: ["Cardiovascular"] }, sample: 2, stratify: ["body_system"] });
    const { records } = await readResults(path.join(r.dir, "results.jsonl"));
    expect(records.map((x) => x.id).sort()).toEqual(["Text-2099", "Text-94"]);
    expect(r.summary.dataset.selection).toMatchObject({ where: { body_system: ["Cardiovascular"] }, matched: 2, selected: 2 });
    expect(summaryMarkdown(r.summary)).toMatch(/where body_system ∈ \{Cardiovascular\} \(2 matched\)/);
  });

  it("a misspelt --stratify or --where field is refused naming the dataset's fields; --field-map outside jsonl is refused", async () => {
    const calls = servers.model.stats().total;
    await expect(run({ dataset: "medxpertqa", input: TEXT, method: "cot", sample: 2, stratify: ["body-system"] })).rejects.toMatchObject({
      code: "INVALID_INPUT",
      message: expect.stringMatching(/--stratify: "body-system" is not a field of this dataset \(did you mean body_system\?\); its fields: body_system, medical_task, question_type, subset/),
    });
    await expect(run({ dataset: "medxpertqa", input: TEXT, method: "cot", where: { bodysystem: ["Cardiovascular"] } })).rejects.toMatchObject({ message: expect.stringMatching(/--where: "bodysystem" is not a field.*its fields: body_system/) });
    await expect(run({ dataset: "medxpertqa", input: TEXT, method: "cot", fieldMap: { question: "q" } })).rejects.toMatchObject({ message: expect.stringMatching(/--field-map applies to --dataset jsonl only/) });
    // jsonl: a map key that is not one, or a field no record has, is refused naming what there is.
    const generic = path.join(tmp, "generic.jsonl");
    await writeFile(generic, JSON.stringify({ id: "g1", question: "Which organ produces insulin?", answer: "pancreas", subject: "physiology" }) + "\n");
    await expect(run({ dataset: "jsonl", input: generic, method: "cot", fieldMap: { strata: ["subjet"] } })).rejects.toMatchObject({ message: expect.stringMatching(/--field-map: no record has "subjet"; the records' fields: answer, id, question, subject/) });
    await expect(run({ dataset: "jsonl", input: generic, method: "cot", fieldMap: { strat: ["subject"] } as never })).rejects.toMatchObject({ message: expect.stringMatching(/--field-map: "strat" is not a key of the field map; use id, question, options, answer, answerKind, notes, images, strata/) });
    expect(servers.model.stats().total).toBe(calls);
  });
});

describe("raw model output on every method's records", () => {
  it("cot, self-consistency and medmmv records keep each reply's raw text with the model id and system_fingerprint the server reported; --save-results refuses a method without a DiagnosisResult", async () => {
    servers.model.setScenario(evalScenario({ answerFor: answerByItem(await readItems("medxpertqa", TEXT), () => "gold") }));
    const cot = await run({ dataset: "medxpertqa", input: TEXT, method: "cot", limit: 1 });
    const [c] = (await readResults(path.join(cot.dir, "results.jsonl"))).records;
    expect(c!.calls).toHaveLength(1);
    expect(c!.calls![0]).toMatchObject({ agent: "cot", model: expect.any(String), systemFingerprint: "scripted", text: expect.stringMatching(/"answer"/) });

    const sc = await run({ dataset: "medxpertqa", input: TEXT, method: "self-consistency", pipeline: { k: 3 }, limit: 1 });
    const [s] = (await readResults(path.join(sc.dir, "results.jsonl"))).records;
    expect(s!.calls).toHaveLength(3);
    expect(s!.calls!.every((x) => x.systemFingerprint === "scripted" && x.text.length > 0)).toBe(true);

    const mm = await run({ dataset: "medxpertqa", input: TEXT, method: "medmmv", limit: 1 });
    const [m] = (await readResults(path.join(mm.dir, "results.jsonl"))).records;
    expect(m!.calls!.length).toBeGreaterThan(3);
    expect(new Set(m!.calls!.map((x) => x.agent))).toContain("rollout");
    expect(m!.calls!.every((x) => x.text.length <= 4000)).toBe(true);

    await expect(run({ dataset: "medxpertqa", input: TEXT, method: "cot", saveResults: true })).rejects.toMatchObject({ code: "INVALID_INPUT", message: expect.stringMatching(/--save-results writes MedMMV's DiagnosisResult.*--method cot has none/) });
  });
});

describe("honest defaults", () => {
  it("a run without prices says its cost is unpriced, in the summary and the progress line, rather than $0", async () => {
    servers.model.setScenario(evalScenario({ answerFor: answerByItem(await readItems("medxpertqa", TEXT), () => "gold") }));
    const r = await run({ dataset: "medxpertqa", input: TEXT, method: "cot", limit: 2 }, { MEDMMV_PRICES: "" });
    expect(r.summary.unpriced).toEqual([expect.any(String)]);
    const md = summaryMarkdown(r.summary);
    expect(md).toMatch(/\| cost \(USD\)\s+\|\s+unpriced \|\s+unpriced \|/);
    expect(md).toMatch(/has no price .* the run's cost is unknown, not \$0/);
    expect(progressText({ total: 2, resumed: 0, done: 1, correct: 1, failed: 0, tokens: 10, costUsd: 0, elapsedMs: 1000, unpriced: true })).toMatch(/· unpriced/);

    const priced = await run({ dataset: "medxpertqa", input: TEXT, method: "cot", limit: 2 }, { MEDMMV_PRICES: JSON.stringify({ [r.summary.unpriced![0]!]: { input: 1, output: 2 } }) });
    expect(priced.summary.unpriced).toBeUndefined();
    expect(summaryMarkdown(priced.summary)).toMatch(/\| cost \(USD\)\s+\|\s+0\.\d{4} \|\s+0\.\d{4} \|/);
  });
});

describe("calibration notes say what they did with abstentions", () => {
  it("abstained records with a score count as wrong; those without one are named as left out", () => {
    const recs = [
      ...[0.9, 0.8, 0.7, 0.6].map((c, i) => resultRecord(`a${i}`, 0, "completed", { answerSupport: c, correct: i < 3 })),
      resultRecord("b0", 0, "abstained", { answerSupport: 0.3, correct: false }),
      resultRecord("b1", 0, "abstained", { answerSupport: null, correct: false }),
      resultRecord("c0", 0, "failed", { answerSupport: null, correct: false }),
    ];
    const md = confidenceSections({ confidence: confidenceFigures(recs), abstention: abstentionFigures(recs) }).join("\n");
    expect(md).toMatch(/1 abstained record with a score counts as wrong; 1 abstained without a score is left out; failed records are left out\./);
  });
});

describe("default item concurrency", () => {
  it("follows MEDMMV_MAX_CONCURRENCY rather than a fixed 4", async () => {
    servers.model.setScenario(evalScenario({ answerFor: answerByItem(await readItems("medxpertqa", TEXT), () => "gold") }));
    const r = await runEval({ dataset: "medxpertqa", input: TEXT, method: "cot", out: freshOut() }, { config: servers.config({ MEDMMV_MAX_CONCURRENCY: "13" }), progress: null });
    expect((await readManifest(r.dir))!.concurrency).toBe(13);
  });
});

describe("CallCollector caps what a record keeps", () => {
  it("each reply at 4,000 characters, 32,000 a record (later replies keep model and fingerprint), 64 replies", () => {
    const c = new CallCollector();
    const reply = (i: number, text: string) => {
      c.handleChatModelStart({} as never, [], `run-${i}`, undefined, undefined, undefined, { caseId: "case-1", agent: "rollout" });
      c.handleLLMEnd({ generations: [[{ text, message: new AIMessage({ content: text, response_metadata: { model_name: "m-2025", system_fingerprint: "fp_1" } }) } as never]] }, `run-${i}`);
    };
    for (let i = 0; i < 70; i++) reply(i, "x".repeat(5000));
    const { calls, callsNotKept } = c.take("case-1");
    expect(calls).toHaveLength(64);
    expect(callsNotKept).toBe(6);
    expect(calls[0]).toEqual({ agent: "rollout", model: "m-2025", systemFingerprint: "fp_1", text: "x".repeat(4000), cut: 1000 });
    expect(calls.reduce((n, x) => n + x.text.length, 0)).toBe(32_000);
    expect(calls[8]).toMatchObject({ text: "", cut: 5000, model: "m-2025", systemFingerprint: "fp_1" });
    expect(c.take("case-1")).toEqual({ calls: [] });
  });
});
