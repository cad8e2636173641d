import { appendFile, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useScriptedServers } from "../support/scripted-servers-fixture.js";
import { runEval, type EvalRunOptions } from "../../src/eval/runner.js";
import { readResults } from "../../src/eval/results-file.js";
import { savedResultFile } from "../../src/eval/saved-results.js";
import { reportInputFromJson } from "../../src/server/view/report-command.js";
import type { EvalSummary } from "../../src/eval/summary.js";
import { MedmmvError } from "../../src/core/contracts/errors.js";
import { indexCorpusFile } from "../../src/core/search/local/index-corpus-file.js";
import { openCorpusIndex } from "../../src/core/search/local/open-corpus-index.js";
import { answerByItem, evalScenario, fakeImages, readItems, SAMPLE_IMAGES, SAMPLES, type RaterScores, type Verdict } from "./eval-fixtures.js";

const servers = useScriptedServers({ scenario: evalScenario({}) });
const CORPUS = fileURLToPath(new URL("../../examples/corpus/cardiology.jsonl", import.meta.url));
let tmp: string;
let fakeImageDir: string;

beforeAll(async () => {
  tmp = await mkdtemp(path.join(tmpdir(), "medmmv-eval-"));
  // The MedXpertQA MM and PathVQA samples ship without their images: stand-ins with the real names.
  fakeImageDir = path.join(tmp, "images");
  const mm = (await readFile(path.join(SAMPLES, "medxpertqa_mm.jsonl"), "utf8")).split("\n").filter(Boolean).flatMap((l) => (JSON.parse(l) as { images: string[] }).images);
  const pvqa = (await readFile(path.join(SAMPLES, "pathvqa_test_lxmert.jsonl"), "utf8")).split("\n").filter(Boolean).map((l) => `${(JSON.parse(l) as { img_id: string }).img_id}.jpg`);
  await fakeImages(fakeImageDir, [...mm, ...pvqa]);
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

let outCount = 0;
const freshOut = () => path.join(tmp, `out-${++outCount}`);

function config(env: Record<string, string> = {}) {
  return servers.config({ MEDMMV_LLM_BACKOFF_BASE_MS: "5", ...env });
}

async function run(opts: Partial<EvalRunOptions> & Pick<EvalRunOptions, "dataset" | "input">, env: Record<string, string> = {}) {
  return runEval({ out: freshOut(), concurrency: 4, ...opts }, { config: config(env), progress: null });
}

/** The generic JSONL format is not among the samples: a small file of our own. */
async function genericJsonl(): Promise<string> {
  const file = path.join(tmp, "generic.jsonl");
  const rows = [
    { id: "g1", question: "Which vitamin deficiency causes scurvy?", options: ["A. Vitamin A", "B. Vitamin C", "C. Vitamin D"], answer: "B", subject: "nutrition" },
    { id: "g2", question: "Is aspirin an antiplatelet agent?", answer: "yes", subject: "pharmacology" },
    { id: "g3", question: "Which organ produces insulin?", answer: "pancreas", subject: "physiology" },
  ];
  await writeFile(file, rows.map((r) => JSON.stringify(r)).join("\n") + "\n");
  return file;
}

interface Format {
  name: string;
  dataset: string;
  file: () => Promise<string>;
  images?: string;
  fieldMap?: EvalRunOptions["fieldMap"];
}
const sample = (f: string) => async () => path.join(SAMPLES, f);
const FORMATS: Format[] = [
  { name: "MedXpertQA Text", dataset: "medxpertqa", file: sample("medxpertqa_text.jsonl") },
  { name: "MedXpertQA MM", dataset: "medxpertqa", file: sample("medxpertqa_mm.jsonl"), images: "fake" },
  { name: "MedQA 5 options", dataset: "medqa", file: sample("medqa.jsonl") },
  { name: "MedQA 4 options", dataset: "medqa", file: sample("medqa_4options.jsonl") },
  { name: "MedMCQA", dataset: "medmcqa", file: sample("medmcqa.jsonl") },
  { name: "PathVQA", dataset: "pathvqa", file: sample("pathvqa_test_lxmert.jsonl"), images: "fake" },
  { name: "VQA-RAD", dataset: "vqa-rad", file: sample("vqa_rad.jsonl"), images: "samples" },
  { name: "generic JSONL", dataset: "jsonl", file: genericJsonl, fieldMap: { strata: ["subject"] } },
];

describe("gold answers score 100%, wrong answers 0%, for every format and method", () => {
  for (const f of FORMATS) {
    for (const method of ["medmmv", "cot"] as const) {
      it(`${f.name} · ${method}`, async () => {
        const input = await f.file();
        const images = f.images === "fake" ? fakeImageDir : f.images === "samples" ? SAMPLE_IMAGES : undefined;
        const items = await readItems(f.dataset, input, { imagesDir: images, fieldMap: f.fieldMap });
        for (const verdict of ["gold", "wrong"] as Verdict[]) {
          servers.model.setScenario(evalScenario({ answerFor: answerByItem(items, () => verdict) }));
          const { summary } = await run({ dataset: f.dataset, input, images, fieldMap: f.fieldMap, method, pipeline: { k: 2 } });
          expect(summary.items).toBe(items.length);
          expect(summary.failed).toBe(0);
          expect(summary.accuracy).toBe(verdict === "gold" ? 1 : 0);
          expect(summary.correct).toBe(verdict === "gold" ? items.length : 0);
        }
      });
    }
  }

  it("covers choice, closed and open gold answers across the formats", async () => {
    const kinds = new Set<string>();
    for (const f of FORMATS) {
      const images = f.images === "fake" ? fakeImageDir : f.images === "samples" ? SAMPLE_IMAGES : undefined;
      for (const it of await readItems(f.dataset, await f.file(), { imagesDir: images, fieldMap: f.fieldMap })) kinds.add(it.gold.kind);
    }
    expect([...kinds].sort()).toEqual(["choice", "closed", "open"]);
  });

  it("self-consistency too (MedQA and VQA-RAD)", async () => {
    for (const [dataset, file, images] of [
      ["medqa", "medqa.jsonl", undefined],
      ["vqa-rad", "vqa_rad.jsonl", SAMPLE_IMAGES],
    ] as const) {
      const input = path.join(SAMPLES, file);
      const items = await readItems(dataset, input, { imagesDir: images });
      for (const verdict of ["gold", "wrong"] as Verdict[]) {
        servers.model.setScenario(evalScenario({ answerFor: answerByItem(items, () => verdict) }));
        servers.model.reset();
        const { summary } = await run({ dataset, input, images, method: "self-consistency", pipeline: { k: 3 } });
        expect(summary.accuracy).toBe(verdict === "gold" ? 1 : 0);
        // k samples per item, all at the rollout temperature.
        expect(servers.model.stats().byAgent["cot"]).toBe(3 * items.length);
        expect(servers.model.stats().log.every((l) => l.temperature === 0.7)).toBe(true);
      }
    }
  });
});

describe("metrics against hand-computed values", () => {
  it("CoT, MedQA (4 items) × 2 runs, two raters", async () => {
    const input = path.join(SAMPLES, "medqa.jsonl");
    const items = await readItems("medqa", input);
    expect(items).toHaveLength(4);
    // Run 0: items 0,1,2 right, item 3 wrong → 3/4. Run 1: items 0,1 right → 2/4.
    const rightIn = [new Set([0, 1, 2]), new Set([0, 1])];
    const index = new Map(items.map((it, i) => [it.id, i]));
    const raters: RaterScores = {
      "rater-a": { truthfulness: 5, informativeness: 4, consistency: 0.5 },
      "rater-b": { truthfulness: 3, informativeness: 2, consistency: 1 },
    };
    servers.model.setScenario(evalScenario({ answerFor: answerByItem(items, (it, visit) => (rightIn[visit]!.has(index.get(it.id)!) ? "gold" : "wrong")) }, raters));
    // One item at a time: run 0 finishes before run 1 starts, so "visit" is the run index.
    const { summary } = await run({ dataset: "medqa", input, method: "cot", runs: 2, concurrency: 1, raters: ["rater-a", "rater-b"] });

    expect(summary.records).toBe(8);
    expect(summary.accuracyByRun.map((r) => r.accuracy)).toEqual([0.75, 0.5]);
    // mean = (0.75 + 0.5) / 2 = 0.625; sample std = sqrt(((0.75−0.625)² + (0.5−0.625)²) / (2−1)) = sqrt(0.03125) ≈ 0.17678
    expect(summary.accuracy).toBeCloseTo(0.625, 10);
    expect(summary.accuracyStd).toBeCloseTo(Math.sqrt(0.03125), 10);
    expect(summary.correct).toBe(5);
    // Per stratum (pooled over runs): MedQA's meta_info.
    const meta = summary.strata["meta_info"]!;
    let n = 0;
    let correct = 0;
    for (const [i, it] of items.entries()) {
      const cell = meta[it.strata["meta_info"]!]!;
      expect(cell).toBeDefined();
      n++;
      correct += (rightIn[0]!.has(i) ? 1 : 0) + (rightIn[1]!.has(i) ? 1 : 0);
    }
    expect(Object.values(meta).reduce((s, c) => s + c.n, 0)).toBe(2 * n);
    expect(Object.values(meta).reduce((s, c) => s + c.correct, 0)).toBe(correct);
    // One CoT call per item; ratings are counted apart.
    expect(summary.usage.perItem.llmCalls).toBe(1);
    expect(servers.model.stats().byAgent["cot"]).toBe(8);
    expect(servers.model.stats().byAgent["rater"]).toBe(16);
    // Raters (no images, so C counts as 1): T×I a = 5·4/25·100 = 80, b = 3·2/25·100 = 24 → mean 52.
    // Rel a = (5/5)(4/5)·1 = 0.8, b = (3/5)(2/5)·1 = 0.24 → mean 0.52 → CMHR = 100·(1 − 0.52) = 48.
    const rel = summary.reliability!;
    expect(rel.raters).toEqual(["rater-a", "rater-b"]);
    expect(rel.byRater["rater-a"]!.meanTxI).toBeCloseTo(80, 10);
    expect(rel.byRater["rater-b"]!.meanTxI).toBeCloseTo(24, 10);
    expect(rel.overall.n).toBe(16);
    expect(rel.overall.meanTxI).toBeCloseTo(52, 10);
    expect(rel.overall.cmhr).toBeCloseTo(48, 10);
    expect(rel.byRater["rater-a"]!.cmhr).toBeCloseTo(20, 10);
  });

  it("MedMMV: RGM, entropy, CU parts and hallucinations by stage", async () => {
    const input = path.join(SAMPLES, "medqa_4options.jsonl");
    const items = await readItems("medqa", input);
    // Rollouts answer A, B, A (whatever the gold): RGM = mean(H({A}), H({A,B})) = (0 + 1)/2 = 0.5;
    // final distribution {A: 2/3, B: 1/3}: entropy = −(2/3)log2(2/3) − (1/3)log2(1/3) ≈ 0.918296.
    const answers = ["A", "B", "A"];
    servers.model.setScenario(evalScenario({ answerFor: (req) => answers[Number(/rollout (\d+) of/.exec(req.text)![1]) - 1]!, repairsNeeded: { B: 1 }, coherence: { A: 0.8, B: 0.8 } }));
    const { summary } = await run({ dataset: "medqa", input, pipeline: { k: 3, maxRepairs: 3 } });
    expect(summary.failed).toBe(0);
    expect(summary.rgm).toBeCloseTo(0.5, 10);
    expect(summary.entropy).toBeCloseTo(-(2 / 3) * Math.log2(2 / 3) - (1 / 3) * Math.log2(1 / 3), 10);
    // A's path: both claims supported (evidence 1), coherence 0.8, no repair → CU 1.8; B's path
    // needed a repair (penalty 1/3 → 1.4667): A is selected in every item.
    expect(summary.cu).toMatchObject({ n: items.length, evidence: 1, coherence: 0.8, repairPenalty: 0, repairs: 0 });
    expect(summary.cu!.cu).toBeCloseTo(1.8, 10);
    // B's first HD attempt flags its last claim (a knowledge step): one flagged claim per item, repaired.
    expect(summary.hallucinations).toMatchObject({ visual: 0, knowledge: items.length, reasoning: 0, total: items.length, resolved: items.length });
    expect(summary.hallucinations.perItem.total).toBe(1);
    // Gold letters decide the accuracy: A is right exactly where A is the gold.
    const goldA = items.filter((i) => i.gold.option === "A").length;
    expect(summary.accuracy).toBeCloseTo(goldA / items.length, 10);
  });
});

describe("saved results (--save-results)", () => {
  it("MedMMV: each record names a file with its DiagnosisResult and the full evidence graph, which `medmmv report` reads; results.jsonl stays small", async () => {
    const input = path.join(SAMPLES, "medqa_4options.jsonl");
    servers.model.setScenario(evalScenario({}));
    const out = freshOut();
    const { summary } = await runEval({ dataset: "medqa", input, out, limit: 2, pipeline: { k: 2, maxRepairs: 1 }, saveResults: true }, { config: config(), progress: null });
    expect(summary.failed).toBe(0);
    const { records } = await readResults(path.join(out, "results.jsonl"));
    expect(records).toHaveLength(2);
    for (const r of records) {
      expect(r.resultFile).toMatch(/^results\/.+\.r0\.json$/);
      expect(r).not.toHaveProperty("diagnosis");
      const saved = JSON.parse(await readFile(path.join(out, r.resultFile!), "utf8")) as Record<string, unknown>;
      const input = reportInputFromJson(saved);
      expect(input.result.caseId).toBeTruthy();
      // Everything the agents found, not only the selected path's subgraph: the TextDoctor's facts are in it.
      const full = input.fullEvidenceGraph as { nodes: Array<{ attributes?: { kind?: string } }> } | null;
      const selected = (input.result.evidenceGraph as { nodes: unknown[] }).nodes.length;
      expect(full?.nodes.length ?? 0).toBeGreaterThan(0);
      expect(full!.nodes.length).toBeGreaterThanOrEqual(selected);
    }
    // The file names differ per item, and a run without the flag writes none.
    expect(new Set(records.map((r) => r.resultFile)).size).toBe(2);
    const plain = freshOut();
    await runEval({ dataset: "medqa", input, out: plain, limit: 1, pipeline: { k: 2, maxRepairs: 1 } }, { config: config(), progress: null });
    expect((await readResults(path.join(plain, "results.jsonl"))).records[0]!.resultFile).toBeUndefined();
  });

  it("names a file for any dataset id: safe characters kept, the whole id hashed", () => {
    expect(savedResultFile("q/1#p2", 3)).toMatch(/^results\/q_1_p2-[0-9a-f]{12}\.r3\.json$/);
    expect(savedResultFile("q/1#p2", 3)).not.toBe(savedResultFile("q_1_p2", 3));
    // One file inside results/, whatever the id: no separator survives.
    expect(path.posix.dirname(savedResultFile("../../etc", 0))).toBe("results");
  });
});

describe("runs that survive", () => {
  it("a failed item is recorded with its error and retried on --resume; finished items are not rerun", async () => {
    const input = path.join(SAMPLES, "medqa.jsonl");
    const items = await readItems("medqa", input);
    servers.model.setScenario(evalScenario({ answerFor: answerByItem(items, () => "gold") }));
    const victim = items[2]!;
    const marker = victim.case.question.slice(0, 60);
    servers.model.addFault({ kind: "status", status: 500, textIncludes: marker });
    const out = freshOut();
    const env = { MEDMMV_LLM_MAX_ATTEMPTS: "2" };
    const first = await runEval({ dataset: "medqa", input, method: "cot", out, concurrency: 2, itemRetries: 1 }, { config: config(env), progress: null });
    expect(first.summary.failed).toBe(1);
    expect(first.summary.complete).toBe(false);
    expect(first.summary.failures.items).toEqual([expect.objectContaining({ id: victim.id, run: 0, code: "LLM_RETRYABLE" })]);
    const failedLine = (await readResults(path.join(out, "results.jsonl"))).records.find((r) => r.id === victim.id)!;
    expect(failedLine.status).toBe("failed");
    expect(failedLine.attempts).toBe(2); // item retried once after its calls ran out of retries
    expect(failedLine.error?.message).toMatch(/HTTP 500/);

    servers.model.clearFaults();
    servers.model.reset();
    const second = await runEval({ dataset: "medqa", input, method: "cot", out, resume: true }, { config: config(env), progress: null });
    expect(servers.model.stats().total).toBe(1); // only the failed item ran again
    expect(second.written).toBe(1);
    expect(second.summary).toMatchObject({ items: 4, records: 4, failed: 0, accuracy: 1, complete: true });
    const raw = (await readFile(path.join(out, "results.jsonl"), "utf8")).trim().split("\n");
    expect(raw).toHaveLength(5); // the failed record stays in the file; the newer one wins on read
  });

  it("resume tolerates a torn last line and a run killed before writing its summary", async () => {
    const input = path.join(SAMPLES, "medmcqa.jsonl");
    const items = await readItems("medmcqa", input);
    servers.model.setScenario(evalScenario({ answerFor: answerByItem(items, () => "gold") }));
    const out = freshOut();
    await runEval({ dataset: "medmcqa", input, method: "cot", out, limit: 2 }, { config: config(), progress: null });
    await rm(path.join(out, "summary.json"));
    await appendFile(path.join(out, "results.jsonl"), '{"id":"half-writ');
    servers.model.reset();
    const { summary } = await runEval({ dataset: "medmcqa", input, method: "cot", out, resume: true }, { config: config(), progress: null });
    expect(servers.model.stats().total).toBe(items.length - 2);
    expect(summary).toMatchObject({ items: items.length, failed: 0, accuracy: 1, complete: true });
    const read = await readResults(path.join(out, "results.jsonl"));
    expect(read).toMatchObject({ invalidLines: 0, tornTail: false });
    expect(read.records.map((r) => r.id).sort()).toEqual(items.map((i) => i.id).sort());
  });

  it("refuses to mix results: an existing folder needs --resume, and --resume needs the same configuration", async () => {
    const input = path.join(SAMPLES, "medmcqa.jsonl");
    const items = await readItems("medmcqa", input);
    servers.model.setScenario(evalScenario({ answerFor: answerByItem(items, () => "gold") }));
    const out = freshOut();
    await runEval({ dataset: "medmcqa", input, method: "cot", out, limit: 1 }, { config: config(), progress: null });
    await expect(runEval({ dataset: "medmcqa", input, method: "cot", out }, { config: config(), progress: null })).rejects.toMatchObject({ code: "CONFLICT" });
    const err = await runEval({ dataset: "medmcqa", input, method: "medmmv", out, resume: true }, { config: config(), progress: null }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MedmmvError);
    expect((err as MedmmvError).code).toBe("CONFLICT");
    expect((err as MedmmvError).message).toMatch(/method/);
    await expect(runEval({ dataset: "medmcqa", input, method: "medmmv", out, resume: true, pipeline: { ablations: { noHd: true } } }, { config: config(), progress: null })).rejects.toMatchObject({ code: "CONFLICT" });
  });

  it("the manifest records the search provider that ran; an older manifest's setting still resumes the run it described", async () => {
    const input = path.join(SAMPLES, "medmcqa.jsonl");
    const items = await readItems("medmcqa", input);
    servers.model.setScenario(evalScenario({ answerFor: answerByItem(items, () => "gold") }));
    // MEDMMV_SEARCH unset, no Tavily key: the default finds the corpus indexed in the SQLite store.
    const withCorpus = path.join(tmp, "data-with-corpus");
    const index = await openCorpusIndex({ databaseUrl: null, dataDir: withCorpus });
    try {
      expect((await indexCorpusFile(index, CORPUS, "cardiology")).errors).toEqual([]);
    } finally {
      await index.close();
    }
    const cfg = config({ MEDMMV_DATA_DIR: withCorpus });
    expect(cfg.search).toMatchObject({ provider: "none", auto: true });
    const opts = { dataset: "medmcqa", input, method: "medmmv", pipeline: { k: 1, maxRepairs: 0 } } as const;
    const manifestOf = async (dir: string) => JSON.parse(await readFile(path.join(dir, "eval.json"), "utf8")) as { config: Record<string, unknown> };

    const out = freshOut();
    await runEval({ ...opts, out, limit: 1 }, { config: cfg, progress: null });
    expect((await manifestOf(out)).config).toMatchObject({ searchProvider: "local" });
    // Written before the provider that ran was recorded: `search` held the setting, "none", and the run used the corpus all the same.
    const { searchProvider: _ran, ...rest } = (await manifestOf(out)).config;
    await writeFile(path.join(out, "eval.json"), JSON.stringify({ ...(await manifestOf(out)), config: { ...rest, search: "none" } }));
    const resumed = await runEval({ ...opts, out, limit: 2, resume: true }, { config: cfg, progress: null });
    expect(resumed.summary).toMatchObject({ records: 2, complete: true });
    expect((await manifestOf(out)).config).toMatchObject({ searchProvider: "local" });
    expect((await manifestOf(out)).config).not.toHaveProperty("search");

    // A run that had no corpus to search is not resumed with one.
    const bare = freshOut();
    await runEval({ ...opts, out: bare, limit: 1 }, { config: config({ MEDMMV_DATA_DIR: path.join(tmp, "data-without-corpus") }), progress: null });
    expect((await manifestOf(bare)).config).toMatchObject({ searchProvider: "none" });
    await expect(runEval({ ...opts, out: bare, limit: 1, resume: true }, { config: cfg, progress: null })).rejects.toMatchObject({ code: "CONFLICT", message: expect.stringMatching(/different configuration[^;]*: config: was /) });
  });

  it("20% 429s (Retry-After 0) and 5% 500s: every item finishes, and item concurrency is cut", async () => {
    const input = path.join(SAMPLES, "medqa.jsonl");
    const items = await readItems("medqa", input);
    servers.model.setScenario(evalScenario({ answerFor: answerByItem(items, () => "gold") }));
    servers.model.addFault({ kind: "status", status: 429, retryAfterSec: 0, probability: 0.2 });
    servers.model.addFault({ kind: "status", status: 500, probability: 0.05 });
    servers.model.setLatency(5);
    const { summary, dir } = await runEval({ dataset: "medqa", input, out: freshOut(), runs: 2, concurrency: 4, pipeline: { k: 3 } }, { config: config(), progress: null, throttleCooldownMs: 50 });
    const stats = servers.model.stats();
    expect(stats.faultsInjected.status).toBeGreaterThan(5);
    expect(summary).toMatchObject({ items: 4, records: 8, failed: 0, accuracy: 1, complete: true });
    expect(summary.throttle!.rateLimited).toBeGreaterThan(0);
    expect(summary.throttle!.decreases).toBeGreaterThan(0);
    expect(summary.throttle!.minConcurrency).toBeLessThan(4);
    const { records } = await readResults(path.join(dir, "results.jsonl"));
    expect(new Set(records.map((r) => `${r.id}/${r.run}`)).size).toBe(8);
  });

  it("cancelled (Ctrl-C): items in flight are dropped, the summary says incomplete, --resume finishes", async () => {
    const input = path.join(SAMPLES, "medxpertqa_text.jsonl");
    const items = await readItems("medxpertqa", input);
    servers.model.setScenario(evalScenario({ answerFor: answerByItem(items, () => "gold") }));
    servers.model.setLatency(80);
    const out = freshOut();
    const ctrl = new AbortController();
    const running = runEval({ dataset: "medxpertqa", input, method: "cot", out, runs: 2, concurrency: 2 }, { config: config(), progress: null, signal: ctrl.signal });
    while ((await readFile(path.join(out, "results.jsonl"), "utf8").catch(() => "")).split("\n").filter(Boolean).length < 2) await new Promise((r) => setTimeout(r, 10));
    ctrl.abort();
    const stopped = await running;
    expect(stopped.interrupted).toBe(true);
    expect(stopped.summary.complete).toBe(false);
    expect(stopped.summary.failed).toBe(0); // cancelled items are not failures
    expect(stopped.summary.records).toBeLessThan(8);
    servers.model.setLatency(0);
    const resumed = await runEval({ dataset: "medxpertqa", input, method: "cot", out, runs: 2, resume: true }, { config: config(), progress: null });
    expect(resumed.written).toBe(8 - stopped.summary.records);
    expect(resumed.summary).toMatchObject({ records: 8, accuracy: 1, complete: true });
  });

  it("results.jsonl grows one synced line per finished item while the run is going", async () => {
    const input = path.join(SAMPLES, "medxpertqa_text.jsonl");
    const items = await readItems("medxpertqa", input);
    servers.model.setScenario(evalScenario({ answerFor: answerByItem(items, () => "gold") }));
    servers.model.setLatency(60);
    const out = freshOut();
    const seen: number[] = [];
    const running = runEval({ dataset: "medxpertqa", input, method: "cot", out, concurrency: 1 }, { config: config(), progress: null });
    const poll = setInterval(() => {
      readFile(path.join(out, "results.jsonl"), "utf8").then(
        (t) => seen.push(t.split("\n").filter(Boolean).length),
        () => undefined,
      );
    }, 20);
    await running;
    clearInterval(poll);
    // Lines appeared one by one before the run ended.
    expect(seen.some((n) => n > 0 && n < items.length)).toBe(true);
    const { records } = await readResults(path.join(out, "results.jsonl"));
    const r = records[0]!;
    expect(r).toMatchObject({ id: items[0]!.id, run: 0, status: "completed", correct: true, gold: items[0]!.gold, answer: { option: items[0]!.gold.option } });
    expect(r.usage.llmCalls).toBe(1);
    expect(r.strata).toEqual(items[0]!.strata);
  });
});

describe("dataset details in the summary", () => {
  it("missing images: failed items with a clear error, or a flagged text-only run", async () => {
    const input = path.join(SAMPLES, "vqa_rad.jsonl");
    const items = await readItems("vqa-rad", input, { imagesDir: SAMPLE_IMAGES });
    // Text-only prompts carry no image ids, so the model recognises the items without them.
    const textOnlyItems = items.map((i) => ({ ...i, case: { ...i.case, images: [] } }));
    servers.model.setScenario(evalScenario({ answerFor: answerByItem(textOnlyItems, () => "gold") }));
    // No images folder at all: refused before any call, rather than failing every item.
    await expect(run({ dataset: "vqa-rad", input, method: "cot" })).rejects.toMatchObject({ code: "INVALID_INPUT", message: expect.stringMatching(/4 of the 4 selected items have images .*pass --images DIR, or --missing-images text-only/) });
    expect(servers.model.stats().total).toBe(0);
    // A folder without the files: each item fails with a clear error.
    const strict = await run({ dataset: "vqa-rad", input, method: "cot", images: path.join(tmp, "no-images-here") });
    expect(strict.summary).toMatchObject({ records: 4, failed: 4, accuracy: 0 });
    expect(strict.summary.failures.byCode).toEqual({ INVALID_INPUT: 4 });
    expect(strict.summary.dataset.readErrors).toBe(4);
    expect(strict.summary.failures.items[0]!.message).toMatch(/--images/);
    expect(servers.model.stats().total).toBe(0);

    const textOnly = await run({ dataset: "vqa-rad", input, method: "cot", missingImages: "text-only" });
    expect(textOnly.summary).toMatchObject({ failed: 0, accuracy: 1 });
    expect(textOnly.summary.strata["images"]).toMatchObject({ missing: { n: 4, correct: 4, accuracy: 1 } });
    expect(textOnly.summary.dataset.warnings).toBe(4);
    expect(servers.model.stats().log.every((l) => l.images === 0)).toBe(true);
  });

  it("MedMCQA: the cop base and how it was decided; sampling stratified and reproducible", async () => {
    const input = path.join(SAMPLES, "medmcqa.jsonl");
    const items = await readItems("medmcqa", input);
    servers.model.setScenario(evalScenario({ answerFor: answerByItem(items, () => "gold") }));
    const a = await run({ dataset: "medmcqa", input, method: "cot", sample: 2, stratify: ["subject_name"], seed: 7 });
    expect(a.summary.dataset.details).toMatchObject({ copBase: expect.any(Number), copBaseSource: expect.stringMatching(/detected|default/) });
    expect(a.summary.dataset.selection).toMatchObject({ available: items.length, selected: 2, seed: 7, stratify: ["subject_name"] });
    const b = await run({ dataset: "medmcqa", input, method: "cot", sample: 2, stratify: ["subject_name"], seed: 7 });
    const ids = async (dir: string) => (await readResults(path.join(dir, "results.jsonl"))).records.map((r) => r.id).sort();
    expect(await ids(a.dir)).toEqual(await ids(b.dir));
    const forced = await run({ dataset: "medmcqa", input, method: "cot", copBase: 1, limit: 1 });
    expect(forced.summary.dataset.details).toMatchObject({ copBase: 1, copBaseSource: "option" });
  });

  it("summary.json and summary.md describe the method, ablations and prompt versions", async () => {
    const input = path.join(SAMPLES, "medqa.jsonl");
    const items = await readItems("medqa", input);
    servers.model.setScenario(evalScenario({ answerFor: answerByItem(items, () => "gold") }));
    const { summary, dir } = await run({ dataset: "medqa", input, pipeline: { k: 2, select: "majority", ablations: { noHd: true } } });
    const onDisk = JSON.parse(await readFile(path.join(dir, "summary.json"), "utf8")) as EvalSummary;
    expect(onDisk.accuracy).toBe(summary.accuracy);
    expect(onDisk.label).toBe("medmmv (no-hd, select=majority)");
    expect(onDisk.config).toMatchObject({ k: 2, select: "majority", ablations: { noHd: true, noExpansion: false } });
    expect(onDisk.prompts["rollout"]).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(servers.model.stats().byAgent["hd-supervisor"] ?? 0).toBe(0);
    const md = await readFile(path.join(dir, "summary.md"), "utf8");
    expect(md).toContain("# Eval: medmmv (no-hd, select=majority) on medqa");
    expect(md).toMatch(/\| accuracy \(%\)\s+\| 100\.0/);
    expect(md).toContain("### meta_info");
  });
});
