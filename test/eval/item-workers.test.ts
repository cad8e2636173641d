import { execFileSync } from "node:child_process";
import { getEventListeners } from "node:events";
import { readdirSync, readlinkSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ResponseCache } from "../../src/core/llm/model-client.js";
import { readResults, type ResultRecord } from "../../src/eval/results-file.js";
import { ItemWorkerPool } from "../../src/eval/item-workers.js";
import { runEval, type EvalRunOptions } from "../../src/eval/runner.js";
import type { EvalItem } from "../../src/eval/datasets/index.js";
import { alive } from "../support/bundled-process.js";
import { MEDMMV_BIN } from "../support/medmmv-cli.js";
import { useScriptedServers } from "../support/scripted-servers-fixture.js";
import { until } from "../support/until.js";
import { answerByItem, evalScenario, fakeImages, readItems, SAMPLES } from "./eval-fixtures.js";

// `medmmv eval --workers N`: the items answered in item processes started from the CLI's
// own entry (bin/medmmv.js, the bundle test/support/build-cli.ts built), as the CLI starts them.
const servers = useScriptedServers({ scenario: evalScenario({}) });
const ENTRY = { script: MEDMMV_BIN, execArgv: [] };
const INPUT = path.join(SAMPLES, "medxpertqa_mm.jsonl");
let tmp: string;
let images: string;
let items: EvalItem[];

beforeAll(async () => {
  tmp = await mkdtemp(path.join(tmpdir(), "medmmv-item-workers-"));
  // The MedXpertQA MM sample ships without its images: stand-ins with the real names, so each item carries pictures across the processes.
  images = path.join(tmp, "images");
  const names = (await readFile(INPUT, "utf8")).split("\n").filter(Boolean).flatMap((l) => (JSON.parse(l) as { images: string[] }).images);
  await fakeImages(images, names);
  items = await readItems("medxpertqa", INPUT, { imagesDir: images });
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

let outCount = 0;
const freshOut = () => path.join(tmp, `out-${++outCount}`);

/** Every other item answered right, so a record moved to the wrong item would show. */
function alternateAnswers(): void {
  servers.model.setScenario(evalScenario({ answerFor: answerByItem(items, (it) => (items.indexOf(it) % 2 === 0 ? "gold" : "wrong")) }));
}

function run(o: Partial<EvalRunOptions>, env: Record<string, string> = {}, deps: { cache?: ResponseCache; signal?: AbortSignal } = {}) {
  return runEval({ dataset: "medxpertqa", input: INPUT, images, out: freshOut(), concurrency: 4, ...o }, { config: servers.config({ MEDMMV_LLM_BACKOFF_BASE_MS: "5", ...env }), progress: null, itemWorkerEntry: ENTRY, ...deps });
}

/** What an item's answer is, wherever it was answered. */
function outcome(r: ResultRecord) {
  return { id: r.id, run: r.run, status: r.status, answer: r.answer, correct: r.correct, llmCalls: r.usage.llmCalls, criticalPathCalls: r.usage.criticalPathCalls, cu: r.cu, hallucinations: r.hallucinations };
}

async function outcomes(dir: string) {
  const { records } = await readResults(path.join(dir, "results.jsonl"));
  return records.map(outcome).sort((a, b) => a.id.localeCompare(b.id) || a.run - b.run);
}

/** The item processes this test's process has now (children running `eval-worker`). */
function itemProcessPids(): number[] {
  let out = "";
  try {
    out = execFileSync("ps", ["-o", "pid=,args=", "--ppid", String(process.pid)], { encoding: "utf8" });
  } catch {
    return []; // ps exits 1 when there are none
  }
  return out
    .split("\n")
    .filter((l) => l.includes("eval-worker"))
    .map((l) => Number(l.trim().split(/\s+/)[0]));
}

/** An entry whose first fork starts `script` and whose later forks throw `message` (the pool reads execArgv once per fork). */
function forkThrowsAfterFirst(script: string, message: string): { entry: { script: string; execArgv: string[] }; forks: () => number } {
  let forks = 0;
  const entry = {
    script,
    get execArgv(): string[] {
      if (++forks > 1) throw new Error(message);
      return [];
    },
  };
  return { entry, forks: () => forks };
}

/** The files under `dir` this process holds open (its descriptors, as Linux lists them). */
function openFilesUnder(dir: string): string[] {
  return readdirSync("/proc/self/fd").flatMap((fd) => {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      return target.startsWith(dir + path.sep) ? [target] : [];
    } catch {
      return []; // closed between the listing and the read
    }
  });
}

describe("medmmv eval --workers", () => {
  it("answers every item in two processes as one process does, images and saved results included", async () => {
    alternateAnswers();
    const one = await run({ runs: 2 });
    const two = await run({ runs: 2, workers: 2, saveResults: true });
    expect(two.summary.records).toBe(8);
    expect(await outcomes(two.dir)).toEqual(await outcomes(one.dir));
    expect(two.summary.accuracy).toBe(one.summary.accuracy);
    expect(one.summary.accuracy).toBe(0.5);
    // Both processes answered items; neither is this one, and both are gone once the run returns.
    const procs = two.itemProcesses!;
    expect(procs).toHaveLength(2);
    expect(procs.every((p) => p.items > 0 && p.pid !== process.pid)).toBe(true);
    expect(procs.reduce((n, p) => n + p.items, 0)).toBe(8);
    expect(procs.some((p) => alive(p.pid))).toBe(false);
    // The DiagnosisResult crossed back whole: the runner wrote it, and it names its item's answer.
    const { records } = await readResults(path.join(two.dir, "results.jsonl"));
    for (const r of records) {
      const saved = JSON.parse(await readFile(path.join(two.dir, r.resultFile!), "utf8")) as { answer: { option: string } | null; fullEvidenceGraph: { nodes: unknown[] } | null };
      expect(saved.answer?.option).toBe(r.answer?.option);
      expect(saved.fullEvidenceGraph?.nodes.length).toBeGreaterThan(0);
    }
  });

  it("keeps the response cache in the runner: what the processes stored, the folder keeps, and a replay of the folder serves", async () => {
    alternateAnswers();
    const store = new Map<string, Record<string, unknown>>();
    const cache: ResponseCache = { get: async (k) => store.get(k) ?? null, put: async (k, v) => void store.set(k, v) };
    const first = await run({ workers: 2 }, { MEDMMV_CACHE: "all" }, { cache });
    expect(servers.model.stats().total).toBeGreaterThan(0);
    expect(store.size).toBeGreaterThan(0);
    expect([...store.keys()].every((k) => k.startsWith("eval:"))).toBe(true);
    servers.model.reset();
    // The replay reads the first run's folder, not the store: an empty store beside it changes nothing.
    const replay = await run({ workers: 2, replayCache: first.dir }, {}, { cache: { get: async () => null, put: async () => undefined } });
    expect(servers.model.stats().total).toBe(0);
    expect(await outcomes(replay.dir)).toEqual((await outcomes(first.dir)).map((o) => ({ ...o, llmCalls: expect.any(Number), criticalPathCalls: expect.any(Number) })));
  });

  it("splits MEDMMV_MAX_CONCURRENCY between the processes, and starts no more processes than it allows calls", async () => {
    alternateAnswers();
    servers.model.setLatency(30);
    const r = await run({ workers: 3 }, { MEDMMV_MAX_CONCURRENCY: "2" });
    expect(r.itemProcesses).toHaveLength(2);
    expect(r.summary.failed).toBe(0);
    expect(servers.model.stats().peakInFlight).toBeLessThanOrEqual(2);
  });

  it("hands the 429s a process hears to the runner's throttle", async () => {
    alternateAnswers();
    servers.model.addFault({ kind: "status", status: 429, retryAfterSec: 0, times: 2 });
    const r = await run({ workers: 2 });
    expect(servers.model.stats().faultsInjected.status).toBe(2);
    expect(r.summary.throttle?.rateLimited).toBeGreaterThanOrEqual(1);
    expect(r.summary.failed).toBe(0);
  });

  it("fails only the items of a process that dies, replaces it, and --resume finishes them", async () => {
    alternateAnswers();
    const out = freshOut();
    // Every call waits until released: the two processes each hold one item when one is killed.
    servers.model.addFault({ kind: "hold" });
    const running = runEval({ dataset: "medxpertqa", input: INPUT, images, out, concurrency: 2, workers: 2 }, { config: servers.config(), progress: null, itemWorkerEntry: ENTRY });
    try {
      await until(() => (servers.model.stats().held >= 2 && itemProcessPids().length === 2) || undefined, 30_000, "a held call from each item process");
      const [victim] = itemProcessPids();
      process.kill(victim!, "SIGKILL");
      await until(() => (!alive(victim!) && itemProcessPids().length === 2) || undefined, 30_000, "the killed process gone and its replacement started");
    } finally {
      servers.model.clearFaults();
      servers.model.releaseHeld("answer");
    }
    const r = await running;
    const { records } = await readResults(path.join(out, "results.jsonl"));
    const failed = records.filter((x) => x.status === "failed");
    expect(failed).toHaveLength(1);
    expect(failed[0]!.error).toMatchObject({ code: "INTERNAL", message: expect.stringContaining("exited") });
    expect(records.filter((x) => x.status === "completed")).toHaveLength(3);
    expect(r.itemProcesses).toHaveLength(3);
    const resumed = await runEval({ dataset: "medxpertqa", input: INPUT, images, out, concurrency: 2, workers: 2, resume: true }, { config: servers.config(), progress: null, itemWorkerEntry: ENTRY });
    expect(resumed.written).toBe(1);
    expect(resumed.summary.failed).toBe(0);
    expect(resumed.summary.records).toBe(4);
    expect(resumed.summary.correct).toBe(2);
  });

  it("an item process lives through the terminal's Ctrl-C (SIGINT): the runner decides what it means", async () => {
    alternateAnswers();
    servers.model.addFault({ kind: "hold" });
    const running = run({ workers: 2, concurrency: 2 });
    try {
      await until(() => (servers.model.stats().held >= 2 && itemProcessPids().length === 2) || undefined, 30_000, "a held call from each item process");
      const pids = itemProcessPids();
      for (const pid of pids) process.kill(pid, "SIGINT");
      // Without its handler a process dies of the signal at once, failing the item it holds (checked: 2 failed).
      servers.model.clearFaults();
      servers.model.releaseHeld("answer");
      const r = await running;
      expect(r.summary.failed).toBe(0);
      expect(r.itemProcesses!.map((p) => p.pid).sort()).toEqual([...pids].sort());
    } finally {
      servers.model.clearFaults();
      servers.model.releaseHeld("drop");
    }
  });

  it("a cancelled run stops its processes and records nothing in flight", async () => {
    alternateAnswers();
    servers.model.addFault({ kind: "hold" });
    const ctrl = new AbortController();
    const running = run({ workers: 2 }, {}, { signal: ctrl.signal });
    try {
      await until(() => servers.model.stats().held >= 1 || undefined, 30_000, "a held call");
      ctrl.abort();
      const r = await running;
      expect(r.interrupted).toBe(true);
      expect(r.written).toBe(0);
      expect(itemProcessPids()).toEqual([]);
    } finally {
      servers.model.releaseHeld("drop");
    }
  });

  it("an item waiting for a process that dies before it is set up fails with the exit, and nothing is left unhandled", async () => {
    // A stand-in entry that exits at once, before it says "started": the first process and each replacement.
    const dying = path.join(tmp, "dies-at-start.mjs");
    await writeFile(dying, "process.exit(3);\n");
    const settings = { dataset: "medxpertqa", method: "cot" as const, stagewise: { format: "structured" as const, replace: null, retries: 2, temperature: 0.7 } };
    const pool = new ItemWorkerPool({ count: 1, entry: { script: dying, execArgv: [] }, config: servers.config(), settings, cacheScope: "eval:test", cache: null, onRateLimited: () => undefined });
    const inner = { name: "cot" as const, prompts: [], run: async () => Promise.reject(new Error("answered in this process")) };
    const prepared = { id: items[0]!.case.id } as never;
    // Sent before the process has exited: it waits for the set-up that never comes.
    await expect(pool.method(inner, items[0]!, 0).run(prepared, new AbortController().signal)).rejects.toMatchObject({ code: "INTERNAL", message: expect.stringContaining("code 3") });
    await expect(pool.ready()).rejects.toMatchObject({ code: "INTERNAL" });
    await pool.close();
    expect(itemProcessPids()).toEqual([]);
  });

  it("a fork that throws ends the run with its error and leaves nothing open: no item process, no handle on results.jsonl, no listener on the caller's signal", async () => {
    // The second fork throws, as fork does when the process table or memory is full; the first process has started.
    const { entry, forks } = forkThrowsAfterFirst(MEDMMV_BIN, "spawn EAGAIN (the second fork)");
    const caller = new AbortController();
    const out = freshOut();
    const running = runEval({ dataset: "medxpertqa", input: INPUT, images, out, concurrency: 2, workers: 2 }, { config: servers.config(), progress: null, itemWorkerEntry: entry, signal: caller.signal });
    await expect(running).rejects.toThrow("spawn EAGAIN (the second fork)");
    expect(forks()).toBe(2);
    // The process started before the throw is stopped with it (it would otherwise wait for its set-up until this process ends).
    await until(() => (itemProcessPids().length === 0 ? true : undefined), 30_000, "the first item process to exit");
    expect(openFilesUnder(out)).toEqual([]);
    expect(getEventListeners(caller.signal, "abort")).toEqual([]);
  });

  it("a replacement whose fork throws is given up with a warning, not thrown out of the exit handler", async () => {
    const dying = path.join(tmp, "dies-at-start-too.mjs");
    await writeFile(dying, "process.exit(3);\n");
    const { entry, forks } = forkThrowsAfterFirst(dying, "spawn EAGAIN (the replacement's fork)");
    const warned: Array<Error & { code?: string }> = [];
    const onWarning = (w: Error) => warned.push(w);
    process.on("warning", onWarning);
    try {
      const settings = { dataset: "medxpertqa", method: "cot" as const, stagewise: { format: "structured" as const, replace: null, retries: 2, temperature: 0.7 } };
      const pool = new ItemWorkerPool({ count: 1, entry, config: servers.config(), settings, cacheScope: "eval:test", cache: null, onRateLimited: () => undefined });
      await expect(pool.ready()).rejects.toMatchObject({ code: "INTERNAL", message: expect.stringContaining("code 3") });
      const warning = await until(() => warned.find((w) => w.code === "MEDMMV_ITEM_PROCESS_NOT_REPLACED"), 10_000, "the warning");
      expect(warning.message).toContain("spawn EAGAIN (the replacement's fork)");
      expect(forks()).toBe(2);
      // No process left to answer: an item fails with that, and close() returns.
      const inner = { name: "cot" as const, prompts: [], run: async () => Promise.reject(new Error("answered in this process")) };
      await expect(pool.method(inner, items[0]!, 0).run({ id: items[0]!.case.id } as never, new AbortController().signal)).rejects.toMatchObject({ code: "INTERNAL", message: expect.stringContaining("every item process") });
      expect(pool.stats()).toHaveLength(1);
      await pool.close();
    } finally {
      process.off("warning", onWarning);
    }
  });

  it("refuses --workers for the methods that checkpoint into results.jsonl", async () => {
    await expect(run({ method: "stagewise", workers: 2 })).rejects.toMatchObject({ code: "INVALID_INPUT", message: expect.stringContaining("--workers") });
    await expect(run({ method: "cot", stageJudge: true, workers: 2 })).rejects.toMatchObject({ code: "INVALID_INPUT" });
    expect(itemProcessPids()).toEqual([]);
  });
});
