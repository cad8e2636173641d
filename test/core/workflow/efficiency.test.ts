import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Scenario } from "../../../src/scripted/scripted-openai-server.js";
import { useScriptedServers } from "../../support/scripted-servers-fixture.js";
import { clinicalScenario, type ClinicalScenarioOptions } from "../../../src/scripted/clinical-scenario.js";
import { chestPainCase } from "../../support/sample-cases.js";
import { Pipeline, pipelineOptions, type PipelineOverrides } from "../../../src/core/workflow/pipeline.js";
import { renderCaseBlock } from "../../../src/core/agents/agent-context.js";
import { openStore } from "../../../src/server/store/open-store.js";
import type { CaseStore } from "../../../src/server/store/case-store.js";
import type { ResponseCache } from "../../../src/core/llm/model-client.js";
import { recordHttpRequests } from "../../support/http-requests.js";

/**
 * The efficiency switches of the pipeline (issue 7), checked on the real HTTP path against
 * the scripted model: each must save calls without changing the selected answer.
 */
const servers = useScriptedServers({ search: true });

async function run(scenario: ClinicalScenarioOptions, overrides: PipelineOverrides = {}, opts: { env?: Record<string, string>; cache?: ResponseCache; id?: string } = {}) {
  servers.model.setScenario(clinicalScenario(scenario));
  servers.model.reset();
  const cfg = servers.config(opts.env);
  const { result } = await new Pipeline(cfg, { cache: opts.cache ?? null }).run(chestPainCase(opts.id), pipelineOptions(cfg, overrides));
  return { result, stats: servers.model.stats() };
}

describe("adaptive rollouts", () => {
  it("save calls on agreeing rollouts and select the same answer", async () => {
    const scenario = { rolloutAnswers: ["B"], identicalReasoning: false, repairsNeeded: { B: 1 } };
    const full = await run(scenario, { adaptive: false });
    const adaptive = await run(scenario, { adaptive: true });
    expect(full.stats.byAgent.rollout).toBe(5);
    expect(adaptive.stats.byAgent.rollout).toBe(3);
    // Settled: one path refined for the agreed answer, counted with all three rollouts.
    expect(adaptive.result.candidates.map((c) => [c.initialAnswer, c.multiplicity])).toEqual([["B", 3]]);
    expect(adaptive.stats.byAgent["hd-supervisor"]).toBe(2); // one check, one repair, one re-check
    expect(full.stats.byAgent["hd-supervisor"]).toBe(10);
    expect(adaptive.result.usage.llmCalls).toBeLessThan(full.result.usage.llmCalls);
    expect(adaptive.result.usage.llmCalls).toBe(adaptive.stats.total);
    expect(adaptive.result.answer).toEqual(full.result.answer);
    expect(adaptive.result.stability.rolloutAnswers).toEqual(["B", "B", "B"]);
    expect(adaptive.result.provenance.config).toMatchObject({ adaptive: true, rolloutsSampled: 3 });
  });

  it("sample all k rollouts when the first round disagrees, and select the same answer", async () => {
    const scenario = { rolloutAnswers: ["B", "C", "B", "B", "A"], identicalReasoning: false };
    const full = await run(scenario, { adaptive: false });
    const adaptive = await run(scenario, { adaptive: true });
    expect(adaptive.stats.byAgent.rollout).toBe(5);
    expect(adaptive.result.usage.llmCalls).toBe(full.result.usage.llmCalls);
    expect(adaptive.result.answer).toEqual(full.result.answer);
    expect(adaptive.result.stability.rolloutAnswers).toEqual(full.result.stability.rolloutAnswers);
    // The second round starts when the first is done, not after the evidence graph: the
    // longest chain of dependent calls is the same as sampling all k at once.
    expect(adaptive.result.usage.criticalPathCalls).toBe(full.result.usage.criticalPathCalls);
  });
});

describe("dedupe of identical rollouts", () => {
  it("refines identical paths once, counts their multiplicity and keeps the answer", async () => {
    const scenario = { rolloutAnswers: ["B", "B", "B", "B", "C"], identicalReasoning: true };
    const plain = await run(scenario, { dedupe: false });
    const deduped = await run(scenario, { dedupe: true });
    expect(plain.stats.byAgent["hd-supervisor"]).toBe(5);
    expect(deduped.stats.byAgent["hd-supervisor"]).toBe(2);
    expect(deduped.stats.byAgent["coherence-judge"]).toBe(2);
    expect(deduped.result.candidates.map((c) => c.multiplicity)).toEqual([4, 1]);
    expect(deduped.result.answer).toEqual(plain.result.answer);
    expect(deduped.result.usage.llmCalls).toBe(plain.result.usage.llmCalls - 6);
  });

  it("does not merge paths that reach the same answer by different reasoning", async () => {
    const { result, stats } = await run({ rolloutAnswers: ["B"], identicalReasoning: false }, { dedupe: true });
    expect(stats.byAgent["hd-supervisor"]).toBe(5);
    expect(result.candidates).toHaveLength(5);
  });
});

describe("response cache in the case store", () => {
  let dir: string;
  let store: CaseStore;
  let cache: ResponseCache;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "medmmv-cache-"));
    store = await openStore({ databaseUrl: null, dataDir: dir });
    cache = { get: (k) => store.getCachedResponse(k).then((r) => r?.value ?? null), put: (k, v) => store.putCachedResponse(k, v) };
  });
  afterAll(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("answers every temperature-0 call of a re-run from the cache", async () => {
    const scenario = { rolloutAnswers: ["B", "C", "B", "B", "B"], identicalReasoning: false, repairsNeeded: { C: 1 } };
    const env = { MEDMMV_CACHE: "deterministic" };
    const first = await run(scenario, {}, { env, cache, id: "cache-run-1" });
    const deterministicFirst = first.stats.log.filter((l) => l.temperature === 0).length;
    expect(deterministicFirst).toBeGreaterThan(10);
    expect(first.result.usage.cacheHits ?? 0).toBe(0);

    const second = await run(scenario, {}, { env, cache, id: "cache-run-2" });
    const calls = second.stats.log;
    expect(calls.filter((l) => l.temperature === 0)).toEqual([]);
    // Rollouts are sampled (temperature 0.7): with MEDMMV_CACHE=deterministic they are paid again.
    expect(calls.map((l) => l.agent)).toEqual(["rollout", "rollout", "rollout", "rollout", "rollout"]);
    expect(second.result.usage.llmCalls).toBe(5);
    expect(second.result.usage.cacheHits).toBe(deterministicFirst);
    expect(second.result.answer).toEqual(first.result.answer);
    expect(second.result.candidates.map((c) => c.scores)).toEqual(first.result.candidates.map((c) => c.scores));
  });

  it("with MEDMMV_CACHE=all, a re-run makes no model call at all", async () => {
    const scenario = { rolloutAnswers: ["D"] };
    const env = { MEDMMV_CACHE: "all" };
    const first = await run(scenario, {}, { env, cache, id: "cache-all-1" });
    expect(first.stats.total).toBeGreaterThan(0);
    const second = await run(scenario, {}, { env, cache, id: "cache-all-2" });
    expect(second.stats.total).toBe(0);
    expect(second.result.usage.llmCalls).toBe(0);
    expect(second.result.answer).toEqual(first.result.answer);
  });

  it("is not used with MEDMMV_CACHE=off", async () => {
    const scenario = { rolloutAnswers: ["E"] };
    const first = await run(scenario, {}, { env: { MEDMMV_CACHE: "off" }, cache, id: "cache-off-1" });
    const second = await run(scenario, {}, { env: { MEDMMV_CACHE: "off" }, cache, id: "cache-off-2" });
    expect(second.stats.total).toBe(first.stats.total);
    expect(second.result.usage.cacheHits ?? 0).toBe(0);
  });
});

describe("prompt order for provider prompt caches", () => {
  it("starts every call of a case with the same system message and case block, and every fact-check and repair call with the same evidence block too", async () => {
    const seen: Array<{ agent: string; messages: unknown[] }> = [];
    const base = clinicalScenario({ rolloutAnswers: ["B", "C"], identicalReasoning: false, repairsNeeded: { C: 1 } });
    const recording: Scenario = {
      ...base,
      agents: Object.fromEntries(
        Object.entries(base.agents).map(([agent, script]) => [
          agent,
          (req: Parameters<Extract<typeof script, (...a: never[]) => unknown>>[0]) => {
            seen.push({ agent: req.agent, messages: req.messages });
            return (script as (r: typeof req) => unknown)(req);
          },
        ]),
      ),
    };
    servers.model.setScenario(recording);
    const cfg = servers.config();
    const c = chestPainCase("prefix-case");
    await new Pipeline(cfg).run(c, pipelineOptions(cfg));

    const agents = new Set(seen.map((s) => s.agent));
    for (const a of ["rollout", "text-doctor", "web-search-query", "web-search-analysis", "hd-supervisor", "auto-repair", "coherence-judge"]) expect(agents).toContain(a);
    const block = renderCaseBlock(c);
    const systems = new Set<string>();
    const evidencePrefixes = new Set<string>();
    const rolloutPrefixes = new Set<string>();
    for (const { agent, messages } of seen) {
      const [system, user] = messages as Array<{ role: string; content: string | Array<{ type: string; text?: string }> }>;
      expect(system!.role, agent).toBe("system");
      systems.add(JSON.stringify(system!.content));
      expect(user!.role, agent).toBe("user");
      const firstText = typeof user!.content === "string" ? user!.content : user!.content.find((p) => p.type === "text")!.text!;
      expect(firstText.startsWith(block), agent).toBe(true);
      // Fact-checking and repair calls share the evidence graph as well: it comes right
      // after the case block, before the agent's own instructions.
      // The rollouts of a case differ only in their last line (which rollout this is): the
      // response schema is placed before it, inside the shared part.
      if (agent === "rollout") {
        const at = firstText.lastIndexOf("This is rollout ");
        expect(at, agent).toBeGreaterThan(firstText.indexOf("Reply with a JSON object that matches this JSON Schema:"));
        rolloutPrefixes.add(firstText.slice(0, at));
      }
      if (agent === "hd-supervisor" || agent === "auto-repair") {
        const end = firstText.indexOf("EVIDENCE>>>");
        expect(firstText.slice(block.length, block.length + 50), agent).toMatch(/^\n\nEvidence graph \(ids in brackets\):\n<<<EVIDENCE\n/);
        expect(end, agent).toBeGreaterThan(block.length);
        evidencePrefixes.add(firstText.slice(0, end + "EVIDENCE>>>".length));
        expect(firstText.indexOf("medmmv-agent:"), agent).toBeGreaterThan(end);
      }
    }
    expect(systems.size).toBe(1);
    expect(seen.filter((s) => s.agent === "hd-supervisor" || s.agent === "auto-repair").length).toBeGreaterThan(2);
    expect(evidencePrefixes.size).toBe(1);
    expect(rolloutPrefixes.size).toBe(1);
  });
});

describe("order of the first calls", () => {
  it("asks the evidence agents before the rollouts, so the longer chain's replies are read first", async () => {
    // The order the requests are started in, in this process: the rollouts' replies are not
    // needed before the evidence graph's, so they must not queue ahead of the text doctor's.
    const recorder = recordHttpRequests();
    try {
      await run({ rolloutAnswers: ["B", "C", "B", "B", "A"], identicalReasoning: false }, { adaptive: false });
    } finally {
      recorder.stop();
    }
    const asked = recorder.requests.map((r) => /medmmv-agent: ([\w-]+)/.exec(r.body)?.[1]).filter((a): a is string => a !== undefined);
    const firstRollout = asked.indexOf("rollout");
    expect(firstRollout).toBeGreaterThan(-1);
    expect(asked.indexOf("text-doctor")).toBeGreaterThan(-1);
    expect(asked.indexOf("text-doctor")).toBeLessThan(firstRollout);
    expect(asked.filter((a) => a === "rollout")).toHaveLength(5);
  });
});
