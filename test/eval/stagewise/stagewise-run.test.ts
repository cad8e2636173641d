import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runEval, type EvalRunOptions } from "../../../src/eval/runner.js";
import { readResults, type ResultRecord } from "../../../src/eval/results-file.js";
import { exportTraces } from "../../../src/eval/stagewise/export-traces.js";
import { useScriptedServers } from "../../support/scripted-servers-fixture.js";
import { stagewiseScenario, type StagewiseBehaviour } from "../../support/stagewise-scenario.js";
import type { EvalItem } from "../../../src/eval/datasets/types.js";
import { useTempDir } from "../datasets/dataset-kit.js";
import { readItems, SAMPLES } from "../eval-fixtures.js";
import { GOLD, IMAGES, TRACES, useClinhalluItems } from "./clinhallu-fixture.js";


const servers = useScriptedServers();
const tmp = useTempDir("medmmv-stagewise-");
const fixture = useClinhalluItems();
let n = 0;

function scenario(b: StagewiseBehaviour = {}) {
  const s = stagewiseScenario(fixture(), b);
  servers.model.setScenario(s);
  return s;
}

async function run(opts: Partial<EvalRunOptions> = {}) {
  const out = path.join(tmp(), `out-${++n}`);
  const r = await runEval({ dataset: "clinhallu", input: GOLD, images: IMAGES, method: "stagewise", out, concurrency: 2, ...opts }, { config: servers.config({ MEDMMV_LLM_BACKOFF_BASE_MS: "5" }), progress: null });
  const file = await readResults(path.join(out, "results.jsonl"));
  return { ...r, lines: file.lines, records: new Map<string, ResultRecord>(file.records.map((x) => [x.id, x])) };
}

const ref = (id: string) => fixture().find((x) => x.id === id)!.stagewise!.reference!;

describe("--method stagewise against the scripted model", () => {
  it("a model that reproduces the reference stages and the gold answer: Acc 100 %, H = 0, ΔAcc = 0", async () => {
    const s = scenario();
    const { summary, records, lines } = await run();
    // The phase checkpoints are compacted away once the run is complete: one line per item.
    expect(lines).toBe(4);
    expect(summary.failed).toBe(0);
    expect(summary.accuracy).toBe(1);
    const sw = summary.stagewise!;
    expect(sw).toMatchObject({ format: "structured", records: 4, acc: 1, hV: 0, hK: 0, hR: 0, hFrom: { hV: "rep-K", hK: "rep-V", hR: "rep-VK" } });
    for (const k of ["V", "K", "VK"] as const) expect(sw.rep[k]).toMatchObject({ acc: 1, deltaAcc: 0, fix: null, break: 0, baseRight: 4, excluded: 0 });
    // One trace and three continuations per item; 3 + 2 + 2 + 1 stage verdicts; every answer judged (4 per item), MC ones too, as ClinHallu does.
    const calls = servers.model.stats().byAgent;
    expect(calls).toEqual({ "stagewise-trace": 4, "stagewise-continue": 12, "stage-judge": 32, "answer-judge": 16 });
    // The item without images gets ClinHallu's text-only variant; the others their image.
    expect(s.traceCalls.map((c) => [c.item, c.images, c.textOnly]).sort()).toEqual([
      ["original_index:0", 1, false],
      ["original_index:1", 1, false],
      ["source_id:SYN-MM-1", 1, false],
      ["source_id:SYN-Text-2", 0, true],
    ]);
    // Images go to the visual-stage judge only (the text-only item has none).
    for (const c of s.stageJudgeCalls) expect(c.images).toBe(c.stage === "visual" && c.item !== "source_id:SYN-Text-2" ? 1 : 0);
    // Judges on the judge role at temperature 0; traces on the executor.
    for (const l of servers.model.stats().log) {
      if (l.agent.endsWith("judge")) expect([l.model, l.temperature]).toEqual(["scripted-judge", 0]);
      else expect(l.model).toBe("scripted-executor");
    }
    const r = records.get("source_id:SYN-MM-1")!;
    expect(r.answer).toEqual({ option: "C", text: "Lung cancer" });
    expect(r.stagewise!.trace).toMatchObject({ valid: true, validation: "OK", answerCorrect: 1, answerBy: "judge", stages: ref("source_id:SYN-MM-1") });
    expect(r.stagewise!.trace!.raw).toMatch(/^\[Visual Recognition\]\n/);
    expect(Object.keys(r.stagewise!.replacements).sort()).toEqual(["K", "V", "VK"]);
    expect(Object.keys(r.stagewise!.replacements.VK!.judged)).toEqual(["reasoning"]);
    expect(Object.keys(r.stagewise!.replacements.K!.judged).sort()).toEqual(["reasoning", "visual"]);
  });

  it("--trace-format text runs ClinHallu's free-text protocol through the same parser, and says so", async () => {
    scenario();
    const { summary, records } = await run({ stagewise: { format: "text" } });
    expect(summary.stagewise).toMatchObject({ format: "text", acc: 1, hV: 0, hK: 0, hR: 0 });
    expect(summary.label).toBe("stagewise (text, rep V,K,VK)");
    expect(servers.model.stats().byAgent["stagewise-trace-text"]).toBe(4);
    const r = records.get("original_index:0")!.stagewise!;
    // The preamble before the first header is ignored; the replacement's raw is the given stages plus the continuation.
    expect(r.trace!.raw.startsWith("Here is my analysis.")).toBe(true);
    expect(r.trace!.stages).toEqual(ref("original_index:0"));
    expect(r.replacements.V!.trace.raw).toMatch(/^\[Visual Recognition\]\n[\s\S]*\[Knowledge Recall\][\s\S]*\[Answer\] yes$/);
  });

  it("a stage judge that flags every stage: H_V = H_K = H_R = 1", async () => {
    scenario({ stageJudge: () => 1 });
    const { summary } = await run();
    expect(summary.stagewise).toMatchObject({ acc: 1, hV: 1, hK: 1, hR: 1 });
    expect(summary.stagewise!.baseline.stages.visual).toMatchObject({ rate: 1, total: 4 });
  });

  it("an item only Rep-K fixes: Fix(K) = 1 on that item, Fix(V) = Fix(VK) = 0", async () => {
    const target = "source_id:SYN-Text-2";
    scenario({
      trace: (it) => (it.id === target ? { ...ref(target), visual: "Own description of expected visual features.", answer: "A. Vitamin A" } : ref(it.id)),
      continuationAnswer: (it, s) => (it.id === target && s !== "K" ? "A. Vitamin A" : ref(it.id).answer),
    });
    const { summary, records } = await run();
    const sw = summary.stagewise!;
    expect(sw.acc).toBe(0.75);
    expect(sw.rep.K).toMatchObject({ fix: 1, fixed: 1, baseWrong: 1, break: 0, acc: 1, deltaAcc: 0.25 });
    expect(sw.rep.V).toMatchObject({ fix: 0, fixed: 0, baseWrong: 1, acc: 0.75, deltaAcc: 0 });
    expect(sw.rep.VK).toMatchObject({ fix: 0, baseWrong: 1 });
    const r = records.get(target)!.stagewise!;
    expect(r.trace!.answerCorrect).toBe(0);
    expect(r.replacements.K!.trace.answerCorrect).toBe(1);
    // Rep-K carries the model's own visual stage, judged against the reference's.
    expect(r.replacements.K!.trace.stages.visual).toBe("Own description of expected visual features.");
    expect(r.replacements.K!.judged.visual).toMatchObject({ hallucinated: 1, by: "judge" });
    expect(records.get(target)!.correct).toBe(false);
  });

  it("invalid traces and judge failures, against hand-computed values", async () => {
    // original_index:0 always writes a 2-word visual stage (invalid); original_index:1's answer
    // judge never validates (-1); SYN-MM-1's knowledge judge never validates (counted hallucinated).
    scenario({
      trace: (it) => (it.id === "original_index:0" ? { ...ref(it.id), visual: "too short" } : ref(it.id)),
      answerJudge: (it, p, t) => (it.id === "original_index:1" ? "fail" : p.trim() === t.trim() ? 1 : 0),
      stageJudge: (it, stage, c, r) => (it.id === "source_id:SYN-MM-1" && stage === "knowledge" ? "fail" : c.trim() === r.trim() ? 0 : 1),
    });
    const { summary, records } = await run({ stagewise: { retries: 1 } });
    const sw = summary.stagewise!;
    const invalid = records.get("original_index:0")!;
    expect(invalid.status).toBe("abstained");
    expect(invalid.stagewise!.trace).toMatchObject({ valid: false, validation: "Step [Visual Recognition] has insufficient text (< 3 words)", attempts: 2, answerCorrect: null });
    expect(records.get("original_index:1")!.stagewise!.trace).toMatchObject({ valid: true, answerCorrect: -1 });
    expect(records.get("source_id:SYN-MM-1")!.stagewise!.judged.knowledge).toMatchObject({ hallucinated: 1, by: "judge-failed" });
    // Acc: MM-1 and Text-2 correct; idx0 invalid and idx1 judge-failed excluded → 2/2.
    expect(sw.baseline).toMatchObject({ acc: 1, correct: 2, total: 2, invalidTraces: 1, judgeFailures: 1 });
    // Baseline stages: idx0's visual differs (1/4); MM-1's knowledge judge failed (1/4).
    expect(sw.baseline.stages).toMatchObject({ visual: { rate: 0.25, hallucinated: 1, total: 4 }, knowledge: { rate: 0.25, judgeFailures: 1 }, reasoning: { rate: 0 } });
    // Rep-V: gold V makes idx0 valid and right → 3 of 3 (idx1 excluded); fixes idx0 (invalid at baseline = wrong).
    expect(sw.rep.V).toMatchObject({ acc: 1, total: 3, deltaAcc: 0, fix: 1, fixed: 1, baseWrong: 1, break: 0, baseRight: 2, excluded: 1 });
    // Rep-K keeps idx0's own 2-word visual stage: still invalid (counted wrong), no fix.
    expect(sw.rep.K).toMatchObject({ acc: 1, total: 2, invalidTraces: 1, fix: 0, baseWrong: 1, break: 0, excluded: 1 });
    expect(sw.rep.VK).toMatchObject({ fix: 1, break: 0 });
    // H_V from Rep-K's visual (idx0 → 1 of 4); H_K from Rep-V's knowledge (MM-1 judge failure → 1 of 4); H_R 0.
    expect([sw.hV, sw.hK, sw.hR]).toEqual([0.25, 0.25, 0]);
    expect(servers.model.stats().byAgent["stagewise-trace"]).toBe(5);
  });

  it("an empty stage is hallucinated without a judge call", async () => {
    const s = scenario({ trace: (it) => (it.id === "original_index:1" ? { ...ref(it.id), knowledge: "" } : ref(it.id)) });
    const { records } = await run({ stagewise: { retries: 0, replace: [] } });
    const r = records.get("original_index:1")!.stagewise!;
    expect(r.trace!.validation).toBe("Missing required step: [Knowledge Recall]");
    expect(r.judged.knowledge).toEqual({ hallucinated: 1, reason: "empty [Knowledge Recall] step", by: "empty" });
    expect(s.stageJudgeCalls.filter((c) => c.item === "original_index:1").map((c) => c.stage).sort()).toEqual(["reasoning", "visual"]);
    expect(servers.model.stats().byAgent["stagewise-continue"]).toBeUndefined();
  });

  it("on a dataset without reference traces: no replacement runs, stages judged against the case alone", async () => {
    const input = path.join(SAMPLES, "medqa.jsonl");
    const medqa = await readItems("medqa", input);
    const trace = (it: EvalItem) => ({ visual: "No image is given for this vignette.", knowledge: "Relevant textbook knowledge for the question.", reasoning: "Weighing the vignette points to one option.", answer: `${it.gold.option}. ${it.gold.text}` });
    const s = stagewiseScenario(medqa, { trace, stageJudge: (_it, _stage, _c, reference) => (reference === "(empty)" ? 0 : 1) });
    servers.model.setScenario(s);
    const { summary } = await run({ dataset: "medqa", input, images: undefined });
    expect(summary.failed).toBe(0);
    expect(summary.stagewise).toMatchObject({ acc: 1, hV: null, hK: null, hR: null, rep: {}, hFrom: { hV: "none" }, baseline: { stages: { visual: { rate: 0 }, knowledge: { rate: 0 }, reasoning: { rate: 0 } } } });
    expect(servers.model.stats().byAgent["stagewise-continue"]).toBeUndefined();
    expect(s.stageJudgeCalls).toHaveLength(3 * medqa.length);
  });

  it("export-traces writes ClinHallu's own files, which read back (--traces) to the same stages", async () => {
    scenario({ trace: (it) => (it.id === "original_index:1" ? { ...ref(it.id), knowledge: "" } : { ...ref(it.id), reasoning: `${ref(it.id).reasoning} (own words)` }) });
    const { dir, records } = await run({ stagewise: { retries: 0 } });
    const to = path.join(tmp(), "exported");
    expect(await exportTraces(dir, to)).toEqual({ "model_cot.jsonl": 4, "replace/replace_vr.jsonl": 4, "replace/replace_kr.jsonl": 4, "replace/replace_vr_kr.jsonl": 4 });
    const lines = (await readFile(path.join(to, "model_cot.jsonl"), "utf8")).trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
    const mm = lines.find((l) => l["source_id"] === "SYN-MM-1")!;
    // The gold record's fields, without its reference trace, plus the model's trace.
    expect(mm).toMatchObject({ question: expect.stringContaining("smoker"), answer: "C. Lung cancer", answer_letter: "C", cot_valid: true, cot_validation_reason: "OK", cot_meta: { mode: "model", model: "scripted-executor" } });
    expect(mm["gold_cot"]).toBeUndefined();
    expect(lines.find((l) => l["original_index"] === 1)).toMatchObject({ cot_valid: false, generation_status: "invalid_cot", cot_validation_reason: "Missing required step: [Knowledge Recall]" });
    const kr = JSON.parse((await readFile(path.join(to, "replace", "replace_kr.jsonl"), "utf8")).split("\n")[0]!) as Record<string, unknown>;
    expect(kr).toMatchObject({ experiment: "replace_kr", cot_meta: { mode: "replace_kr", replaced_steps: ["knowledge_recall"], preserved_steps: ["visual_recognition"] } });
    const back = await readItems("clinhallu", GOLD, { imagesDir: IMAGES, tracesFile: path.join(to, "model_cot.jsonl") });
    for (const it of back) {
      const mine = records.get(it.id)!.stagewise!.trace!;
      expect(it.stagewise!.external).toMatchObject({ stages: mine.stages, valid: mine.valid, validation: mine.validation });
    }
  });

  it("--traces judges another system's model_cot.jsonl: no generation, no replacement, so no ClinHallu H; the baseline traces' own stage rates", async () => {
    const s = scenario();
    const { summary, records } = await run({ traces: TRACES });
    expect(servers.model.stats().byAgent["stagewise-trace"]).toBeUndefined();
    expect(servers.model.stats().byAgent["stagewise-continue"]).toBeUndefined();
    const sw = summary.stagewise!;
    expect(sw.format).toBe("external");
    expect(sw.hFrom).toEqual({ hV: "none", hK: "none", hR: "none" });
    expect([sw.hV, sw.hK, sw.hR]).toEqual([null, null, null]);
    // idx1 lacks its knowledge stage: invalid, excluded from Acc, that stage hallucinated without a call.
    expect(sw.baseline).toMatchObject({ total: 3, correct: 3, invalidTraces: 1 });
    expect(records.get("original_index:1")!.stagewise!.judged.knowledge!.by).toBe("empty");
    expect(s.stageJudgeCalls).toHaveLength(11);
    // Every trace differs from the reference wording: the scripted judge flags each judged stage.
    expect(sw.baseline.stages.knowledge.rate).toBe(1);
    expect(summary.dataset.details).toMatchObject({ traceRecords: 4, itemsWithoutTrace: 0 });
  });
});

describe("--method stagewise, where ClinHallu's own scripts set the rule", () => {
  it("--letter-shortcut settles exact MC letters without the judge (ours; ClinHallu asks the judge for every answer)", async () => {
    scenario();
    const { summary, records } = await run({ stagewise: { letterShortcut: true } });
    expect(summary.stagewise).toMatchObject({ acc: 1 });
    // The two MC items' four traces each answer "C. Lung cancer"-style, exactly an option: no call for them.
    expect(servers.model.stats().byAgent["answer-judge"]).toBe(8);
    expect(records.get("source_id:SYN-MM-1")!.stagewise!.trace).toMatchObject({ answerCorrect: 1, answerBy: "letter" });
  });

  it("a replacement whose call fails for good is ClinHallu's api_failed record in that file only: the item's baseline and other settings keep their results", async () => {
    scenario({ continuationFails: (it, setting) => it.id === "source_id:SYN-MM-1" && setting === "V" });
    const { summary, records, dir } = await run();
    expect(summary.failed).toBe(0);
    const r = records.get("source_id:SYN-MM-1")!;
    expect(r.status).toBe("completed");
    expect(r.stagewise!.trace).toMatchObject({ valid: true, answerCorrect: 1 });
    expect(r.stagewise!.replacements.V!.trace).toMatchObject({ valid: false, apiFailed: true, validation: "api_failed (LLM_BAD_OUTPUT)", answerCorrect: null });
    expect(r.stagewise!.replacements.V!.judged.knowledge).toMatchObject({ hallucinated: 1, by: "empty" });
    const sw = summary.stagewise!;
    // Baseline untouched; Rep-V leaves the failed trace out of Acc and counts its stages hallucinated.
    expect(sw.baseline).toMatchObject({ total: 4, correct: 4 });
    expect(sw.rep.V).toMatchObject({ total: 3, correct: 3, invalidTraces: 1, stages: { knowledge: { total: 4, hallucinated: 1 }, reasoning: { total: 4, hallucinated: 1 } } });
    expect(sw.hK).toBe(1 / 4);
    expect(sw.rep.K).toMatchObject({ total: 4, correct: 4 });
    const to = path.join(tmp(), "exported-failed");
    await exportTraces(dir, to);
    const vr = (await readFile(path.join(to, "replace", "replace_vr.jsonl"), "utf8")).trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(vr.find((l) => l["source_id"] === "SYN-MM-1")).toMatchObject({ cot: null, cot_valid: false, generation_status: "api_failed" });
    const model = (await readFile(path.join(to, "model_cot.jsonl"), "utf8")).trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(model.find((l) => l["source_id"] === "SYN-MM-1")).toMatchObject({ cot_valid: true });
  });

  it("export-traces with repeated and missing sample ids: every record has its own id and its own question, an id-less one original_index = line − 1", async () => {
    const gold = (await readFile(GOLD, "utf8")).trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
    const dup = { ...gold[0]!, question: `${String(gold[0]!["question"])} (repeated id)` };
    const { source_id: _s, original_index: _o, ...idless } = { ...gold[1]!, question: `${String(gold[1]!["question"])} (no id)` } as Record<string, unknown>;
    // A blank line before the id-less record: ClinHallu counts it (line − 1), so its original_index is 4, not its record number 3.
    const file = path.join(tmp(), "gold-ids.jsonl");
    await writeFile(file, [gold[0], dup, gold[2], "", idless].map((r) => (r === "" ? "" : JSON.stringify(r))).join("\n") + "\n");
    const items = await readItems("clinhallu", file, { imagesDir: IMAGES });
    expect(items.map((i) => i.id)).toEqual(["source_id:SYN-MM-1", "source_id:SYN-MM-1~2", String(gold[2]!["source_id"] !== undefined ? `source_id:${String(gold[2]!["source_id"])}` : `original_index:${String(gold[2]!["original_index"])}`), "original_index:4"]);
    servers.model.setScenario(stagewiseScenario(items));
    const { dir } = await run({ input: file, stagewise: { replace: [] } });
    const to = path.join(tmp(), "exported-ids");
    await exportTraces(dir, to);
    const lines = (await readFile(path.join(to, "model_cot.jsonl"), "utf8")).trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
    const ids = lines.map((l) => (l["source_id"] !== undefined ? `source_id:${String(l["source_id"])}` : `original_index:${String(l["original_index"])}`));
    expect(new Set(ids).size).toBe(4);
    expect([...ids].sort()).toEqual(items.map((i) => i.id).sort());
    for (const it of items) expect(lines[ids.indexOf(it.id)]!["question"]).toBe(it.case.question);
    expect(lines.find((l) => l["original_index"] === 4)).toMatchObject({ question: expect.stringContaining("(no id)") });
  });

  it("a structured trace whose stages contain a header or [Answer] reads back from its export to the same stages and Acc", async () => {
    const tricky = (it: EvalItem) => ({ ...ref(it.id), reasoning: `${ref(it.id).reasoning}\n[Answer] B was considered\nthen [Visual Recognition] findings re-read` });
    scenario({ trace: tricky });
    const { dir, records, summary } = await run({ stagewise: { replace: [] } });
    const to = path.join(tmp(), "exported-tricky");
    await exportTraces(dir, to);
    const back = await readItems("clinhallu", GOLD, { imagesDir: IMAGES, tracesFile: path.join(to, "model_cot.jsonl") });
    for (const it of back) {
      const mine = records.get(it.id)!.stagewise!.trace!;
      expect(it.stagewise!.external).toMatchObject({ stages: mine.stages, valid: mine.valid, validation: mine.validation });
    }
    scenario();
    const again = await run({ traces: path.join(to, "model_cot.jsonl") });
    expect(again.summary.stagewise!.acc).toBe(summary.stagewise!.acc);
  });
});
