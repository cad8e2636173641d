import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ResponseCache } from "../../src/core/llm/model-client.js";
import { readManifest } from "../../src/eval/manifest.js";
import { runEval, type EvalRunOptions } from "../../src/eval/runner.js";
import { useScriptedServers } from "../support/scripted-servers-fixture.js";
import { answerByItem, evalScenario, readItems, SAMPLES } from "./eval-fixtures.js";

const servers = useScriptedServers({ scenario: evalScenario({}) });
const input = path.join(SAMPLES, "medqa.jsonl");
let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(path.join(tmpdir(), "medmmv-run-cache-"));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

/** The store's response cache stand-in: every key it was asked to hold. */
function memoryCache(): ResponseCache & { keys: () => string[] } {
  const m = new Map<string, Record<string, unknown>>();
  return { get: async (k) => m.get(k) ?? null, put: async (k, v) => void m.set(k, v), keys: () => [...m.keys()] };
}

const RUNS = 5;

describe("--runs: every run is a fresh draw from the model", () => {
  it("5 runs of CoT at temperature 0 make 5 × items calls, and ± is what the model returned", async () => {
    const items = await readItems("medqa", input);
    // Run r (the r-th visit of an item, concurrency 1): item i is right when (i + r) is even.
    const index = new Map(items.map((it, i) => [it.id, i]));
    servers.model.setScenario(evalScenario({ answerFor: answerByItem(items, (it, visit) => ((index.get(it.id)! + visit) % 2 === 0 ? "gold" : "wrong")) }));
    servers.model.reset();
    const cache = memoryCache();
    const opts: EvalRunOptions = { dataset: "medqa", input, method: "cot", runs: RUNS, concurrency: 1, out: path.join(tmp, "a") };
    const config = servers.config({ MEDMMV_CACHE: "deterministic" });
    const { summary } = await runEval(opts, { config, progress: null, cache });

    expect(servers.model.stats().byAgent["cot"]).toBe(RUNS * items.length);
    expect(servers.model.stats().log.every((l) => l.temperature === 0)).toBe(true);
    expect(summary.accuracyByRun.map((r) => [r.llmCalls, r.cacheHits])).toEqual(Array.from({ length: RUNS }, () => [items.length, 0]));
    expect(summary.runsFromCache).toEqual([]);
    // 4 items: runs 0, 2, 4 get items 0 and 2 right (1/2), runs 1, 3 items 1 and 3 (1/2).
    expect(summary.accuracyByRun.map((r) => r.accuracy)).toEqual([0.5, 0.5, 0.5, 0.5, 0.5]);
    expect(summary.accuracyStd).toBe(0);
    // The cache was written, in each run's own namespace.
    const scope = (await readManifest(opts.out))!.cacheScope!;
    expect(new Set(cache.keys().map((k) => k.slice(0, k.indexOf(":llm:"))))).toEqual(new Set(Array.from({ length: RUNS }, (_, r) => `eval:${scope}:r${r}`)));
    const md = await readFile(path.join(opts.out, "summary.md"), "utf8");
    expect(md).toMatch(/run 0: 4 made, 0 from cache; run 1: 4 made, 0 from cache/);
    expect(md).not.toMatch(/wholly from the response cache/);

    // A second eval of the same items is a fresh draw too, with answers that now vary by item only.
    servers.model.setScenario(evalScenario({ answerFor: answerByItem(items, (it, visit) => (visit < index.get(it.id)! ? "gold" : "wrong")) }));
    servers.model.reset();
    const second = await runEval({ ...opts, out: path.join(tmp, "b") }, { config, progress: null, cache });
    expect(servers.model.stats().byAgent["cot"]).toBe(RUNS * items.length);
    // Item i is right in its first i runs: run r gets #{i > r} of 4 right → 3/4, 2/4, 1/4, 0, 0.
    expect(second.summary.accuracyByRun.map((r) => r.accuracy)).toEqual([0.75, 0.5, 0.25, 0, 0]);
    expect(second.summary.accuracyStd).toBeGreaterThan(0.3);

    // Asked to, a re-run replays the first eval: no model call, and the headline says so.
    servers.model.reset();
    const replay = await runEval({ ...opts, out: path.join(tmp, "c"), replayCache: opts.out }, { config, progress: null, cache });
    expect(servers.model.stats().total).toBe(0);
    expect(replay.summary.accuracyByRun.map((r) => [r.llmCalls, r.cacheHits])).toEqual(Array.from({ length: RUNS }, () => [0, items.length]));
    expect(replay.summary.runsFromCache).toEqual([0, 1, 2, 3, 4]);
    expect(replay.summary.accuracyByRun.map((r) => r.accuracy)).toEqual(summary.accuracyByRun.map((r) => r.accuracy));
    expect(await readFile(path.join(tmp, "c", "summary.md"), "utf8")).toMatch(/^> Served wholly from the response cache: no model call was made/m);
  });

  it("--replay-cache refuses a folder that is not an eval", async () => {
    await expect(runEval({ dataset: "medqa", input, method: "cot", out: path.join(tmp, "d"), replayCache: tmp }, { config: servers.config(), progress: null, cache: memoryCache() })).rejects.toThrow(/not an eval folder/);
  });
});
