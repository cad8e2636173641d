import { describe, expect, it } from "vitest";
import { ChatOpenAI } from "@langchain/openai";
import { useScriptedServers } from "../../support/scripted-servers-fixture.js";
import { scriptedConfig } from "../../../src/scripted/scripted-config.js";
import { clinicalScenario, FABRICATED_QUOTE } from "../../../src/scripted/clinical-scenario.js";
import { chestPainCase } from "../../support/sample-cases.js";
import { Pipeline, pipelineOptions } from "../../../src/core/workflow/pipeline.js";
import { DiagnosisResult } from "../../../src/core/contracts/diagnosis-result.js";
import { EvidenceGraph } from "../../../src/core/evidence/evidence-graph.js";

const servers = useScriptedServers({ search: true });

async function run(scenario: Parameters<typeof clinicalScenario>[0], env: Record<string, string> = {}, overrides = {}) {
  servers.model.setScenario(clinicalScenario(scenario));
  const cfg = servers.config(env);
  const p = new Pipeline(cfg);
  const started = Date.now();
  const out = await p.run(chestPainCase(), pipelineOptions(cfg, overrides));
  return { ...out, ms: Date.now() - started };
}

describe("MedMMV pipeline over HTTP (scripted model)", () => {
  it("produces a valid DiagnosisResult with path, evidence and provenance", async () => {
    const { result, fullEvidenceGraph } = await run({ rolloutAnswers: ["B", "B", "A", "B", "C"], identicalReasoning: false });
    expect(() => DiagnosisResult.parse(result)).not.toThrow();
    expect(result.status).toBe("completed");
    expect(result.answer?.option).toBe("B");
    expect(result.candidates).toHaveLength(5);
    expect(result.stability.rolloutAnswers).toEqual(["B", "B", "A", "B", "C"]);
    expect(result.path?.steps.length).toBeGreaterThan(0);
    // Every claim's cited evidence is in the exported subgraph, which is in the full graph.
    const sub = EvidenceGraph.import(result.evidenceGraph);
    const full = EvidenceGraph.import(fullEvidenceGraph);
    for (const s of result.path!.steps) for (const c of s.claims) for (const id of c.evidence) expect(sub.hasNode(id)).toBe(true);
    for (const n of sub.nodes()) expect(full.hasNode(n.id)).toBe(true);
    expect(full.nodes().some((n) => n.source.agent === "web-search" && n.source.url && n.source.retrievedAt)).toBe(true);
    expect(Object.keys(result.provenance.prompts)).toContain("rollout");
    expect(result.provenance.prompts.rollout).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(result.usage.llmCalls).toBe(servers.model.stats().total);
    expect(result.usage.searchCalls).toBe(servers.search.stats().total);
  });

  it("runs the k rollouts and the evidence agents at the same time", async () => {
    servers.model.setLatency(150);
    const { result } = await run({ rolloutAnswers: ["B"] });
    const log = servers.model.stats().log;
    const rollouts = log.filter((l) => l.agent === "rollout");
    const text = log.find((l) => l.agent === "text-doctor")!;
    expect(rollouts).toHaveLength(5);
    // All five rollouts and the text doctor overlap in time: peak in flight ≥ 6.
    expect(servers.model.stats().peakInFlight).toBeGreaterThanOrEqual(6);
    for (const r of rollouts) expect(r.start).toBeLessThan(text.end!);
    expect(result.status).toBe("completed");
  });

  it("stops the HD loop when the path is clean", async () => {
    const { result } = await run({ rolloutAnswers: ["B"] });
    const c = result.candidates[0]!;
    expect(c.repairs).toBe(0);
    expect(c.hdReports).toHaveLength(1);
    expect(c.hdReports[0]!.hallucinationDetected).toBe(false);
    expect(servers.model.stats().byAgent["auto-repair"] ?? 0).toBe(0);
  });

  it("stops the HD loop at maxRepairs", async () => {
    const { result } = await run({ rolloutAnswers: ["C"], repairsNeeded: { C: 99 } }, {}, { maxRepairs: 2 });
    const c = result.candidates[0]!;
    expect(c.repairs).toBe(2);
    expect(c.hdReports).toHaveLength(3); // checked after each repair, then the budget is spent
    expect(c.scores!.repairPenalty).toBe(1);
    expect(servers.model.stats().byAgent["auto-repair"]).toBe(2);
    expect(result.hallucinations.some((h) => !h.resolved)).toBe(true);
  });

  it("selects the path with the highest CU, and the CU parts add up", async () => {
    const { result } = await run({ rolloutAnswers: ["A", "C", "B", "D", "E"], identicalReasoning: false, coherence: { A: 0.3, B: 0.95, C: 0.5, D: 0.2, E: 0.1 } });
    const scored = result.candidates.filter((c) => c.scores);
    const best = Math.max(...scored.map((c) => c.scores!.cu));
    const selected = result.candidates.find((c) => c.selected)!;
    expect(selected.scores!.cu).toBe(best);
    expect(selected.finalAnswer).toBe("B");
    for (const c of scored) {
      const s = c.scores!;
      expect(s.cu).toBeCloseTo(s.evidence + s.coherence - s.repairPenalty, 10);
    }
    // answerSupport = Σ CU of paths with the answer ÷ Σ CU of all paths.
    const total = scored.reduce((a, c) => a + Math.max(0, c.scores!.cu), 0);
    expect(result.answerSupport).toBeCloseTo(selected.scores!.cu / total, 10);
  });

  it("keeps a fabricated TextDoctor quote out of the evidence graph", async () => {
    const { fullEvidenceGraph, result } = await run({ rolloutAnswers: ["B"], fabricateQuote: true });
    expect(result.provenance.evidenceChecks!.textDoctor.rejected).toEqual([{ label: "travel to the amazon", reason: "quote not found verbatim in the case text" }]);
    const full = EvidenceGraph.import(fullEvidenceGraph);
    expect(full.nodes().length).toBeGreaterThan(0);
    for (const n of full.nodes()) for (const s of n.sources) expect(s.quote ?? "").not.toContain(FABRICATED_QUOTE);
    expect(full.nodes().some((n) => /amazon/i.test(n.label))).toBe(false);
    // Every text-doctor quote is verbatim at its span.
    const c = chestPainCase();
    const text = [c.notes, c.question].join("\n\n");
    for (const n of full.nodes()) for (const s of n.sources) if (s.agent === "text-doctor") expect(text.slice(s.span![0], s.span![1])).toBe(s.quote);
  });

  it("re-asks after a malformed reply and succeeds", async () => {
    servers.model.addFault({ kind: "malformed-json", agent: "coherence-judge", times: 1 });
    const { result } = await run({ rolloutAnswers: ["B"] });
    expect(result.status).toBe("completed");
    expect(servers.model.stats().byAgent["coherence-judge"]).toBe(2);
    expect(result.candidates[0]!.scores).not.toBeNull();
  });

  it("fails a branch with a typed error after two re-asks, and the case completes without it", async () => {
    // Rollout 2 always answers garbage: 1 ask + 2 re-asks, then LLM_BAD_OUTPUT on that branch only.
    servers.model.addFault({ kind: "schema-violation", agent: "rollout", textIncludes: "rollout 2 of" });
    const { result } = await run({ rolloutAnswers: ["B", "B", "C", "B", "D"], identicalReasoning: false });
    expect(result.status).toBe("completed");
    expect(result.stability.rolloutAnswers[1]).toBeNull();
    expect(result.candidates).toHaveLength(4);
    const failure = result.provenance.failures!.find((f) => f.branch === "rollout-1");
    expect(failure?.code).toBe("LLM_BAD_OUTPUT");
    expect(servers.model.stats().log.filter((l) => l.agent === "rollout" && l.fault === "schema-violation")).toHaveLength(3);
  });

  it("waits out a 429 with Retry-After", async () => {
    servers.model.addFault({ kind: "status", status: 429, retryAfterSec: 1, agent: "text-doctor", times: 1 });
    const { result } = await run({ rolloutAnswers: ["B"] });
    const calls = servers.model.stats().log.filter((l) => l.agent === "text-doctor");
    expect(calls).toHaveLength(2);
    expect(calls[1]!.start - calls[0]!.end!).toBeGreaterThanOrEqual(1000);
    expect(result.status).toBe("completed");
    expect(result.provenance.failures).toEqual([]);
  });

  it("one failing rollout leaves a completed case with k−1 candidates", async () => {
    servers.model.addFault({ kind: "status", status: 500, agent: "rollout", textIncludes: "rollout 4 of" });
    const { result } = await run({ rolloutAnswers: ["B", "C", "A", "D", "E"], identicalReasoning: false }, { MEDMMV_LLM_MAX_ATTEMPTS: "2" });
    expect(result.status).toBe("completed");
    expect(result.candidates).toHaveLength(4);
    expect(result.provenance.failures!.map((f) => f.branch)).toEqual(["rollout-3"]);
    expect(result.provenance.failures![0]!.code).toBe("LLM_RETRYABLE");
  });

  it("fails the case with a clear reason when every rollout fails", async () => {
    servers.model.addFault({ kind: "status", status: 400, agent: "rollout" });
    const { result } = await run({ rolloutAnswers: ["B"] });
    expect(result.status).toBe("failed");
    expect(result.answer).toBeNull();
    expect(result.error?.code).toBe("PIPELINE_FAILED");
    expect(result.error?.message).toMatch(/all 5 rollouts failed/);
  });

  it("a key the provider refuses fails the case with a reason that names the variable to fix", async () => {
    servers.model.addFault({ kind: "status", status: 401 });
    const { result } = await run({ rolloutAnswers: ["B"] });
    expect(result.status).toBe("failed");
    expect(result.error?.message).toContain("refused the API key (HTTP 401): check OPENAI_API_KEY (or AZURE_OPENAI_API_KEY)");
    expect(result.error?.message).not.toMatch(/try again/i);
  });

  it("records web search as failed when the provider is down, and completes", async () => {
    servers.search.addFault({ kind: "status", status: 503 });
    const { result } = await run({ rolloutAnswers: ["B"] });
    expect(result.status).toBe("completed");
    expect(result.provenance.failures!.some((f) => f.branch.startsWith("web-search"))).toBe(true);
  });

  it("says in provenance that web search is off without a key", async () => {
    servers.model.setScenario(clinicalScenario({ rolloutAnswers: ["B"] }));
    const cfg = scriptedConfig(servers.model.baseUrl); // no search server: web search off
    const { result } = await new Pipeline(cfg).run(chestPainCase(), pipelineOptions(cfg));
    expect(result.provenance.search).toEqual({ provider: "none", enabled: false, note: expect.stringMatching(/TAVILY_API_KEY/) });
    expect(result.usage.searchCalls).toBe(0);
  });

  it.each(["jsonSchema", "functionCalling", "jsonMode"])("works with structured output method %s, and its usage is the server's", async (method) => {
    const { result } = await run({ rolloutAnswers: ["B", "A"] , identicalReasoning: false }, { MEDMMV_STRUCTURED_OUTPUT: method });
    expect(result.status).toBe("completed");
    expect(result.answer?.option).toBe("B");
    const log = servers.model.stats().log;
    const modes = new Set(log.map((l) => l.mode));
    expect([...modes]).toEqual([method === "functionCalling" ? "tool" : "content"]);
    // Token counts are what the server reported in each reply's usage block, call for call.
    expect(result.usage.llmCalls).toBe(log.length);
    expect(result.usage.promptTokens).toBe(log.reduce((n, l) => n + l.promptTokens, 0));
    expect(result.usage.completionTokens).toBe(log.reduce((n, l) => n + l.completionTokens, 0));
  });

  it("runs on chat models the embedding program hands in (a factory per role and temperature)", async () => {
    servers.model.setScenario(clinicalScenario({ rolloutAnswers: ["B", "A"], identicalReasoning: false }));
    const cfg = servers.config();
    const asked: Array<{ role: string; temperature: number }> = [];
    const chatModels = {
      executor: (want: { role: string; temperature: number }) => {
        asked.push(want);
        return new ChatOpenAI({ model: "embedded-executor", temperature: want.temperature, apiKey: "k", maxRetries: 0, configuration: { baseURL: servers.model.baseUrl } });
      },
    };
    const { result } = await new Pipeline(cfg, { chatModels }).run(chestPainCase(), pipelineOptions(cfg));
    expect(result.status).toBe("completed");
    expect(result.provenance.models).toMatchObject({ executor: "embedded-executor", judge: "scripted-judge" });
    const log = servers.model.stats().log;
    expect(log.filter((l) => l.agent === "rollout").every((l) => l.model === "embedded-executor" && l.temperature === 0.7)).toBe(true);
    expect(log.some((l) => l.agent === "hd-supervisor" && l.model === "scripted-judge")).toBe(true);
    expect(asked.some((a) => a.role === "executor" && a.temperature === 0.7)).toBe(true);
    // Asked once per role and temperature, then reused (a chat model holds its client and connections).
    expect(asked.length).toBe(new Set(asked.map((a) => `${a.role}|${a.temperature}`)).size);
  });

  it("refines identical rollouts once and counts their multiplicity", async () => {
    const { result } = await run({ rolloutAnswers: ["B", "B", "B", "C", "B"] });
    expect(result.candidates.map((c) => [c.initialAnswer, c.multiplicity])).toEqual([
      ["B", 4],
      ["C", 1],
    ]);
    expect(servers.model.stats().byAgent["hd-supervisor"]).toBe(2);
  });

  it("adaptive rollouts stop after the first round when it agrees", async () => {
    const { result } = await run({ rolloutAnswers: ["B"] }, {}, { adaptive: true });
    expect(servers.model.stats().byAgent["rollout"]).toBe(3);
    expect(result.answer?.option).toBe("B");
    servers.model.reset();
    const split = await run({ rolloutAnswers: ["B", "C", "B", "B", "B"] }, {}, { adaptive: true });
    expect(servers.model.stats().byAgent["rollout"]).toBe(5);
    expect(split.result.answer?.option).toBe("B");
  });
});
