import { beforeEach, describe, expect, it } from "vitest";
import { useScriptedServers } from "../../support/scripted-servers-fixture.js";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import { Pipeline, pipelineOptions } from "../../../src/core/workflow/pipeline.js";
import { forgetAdaptations } from "../../../src/core/llm/model-adaptation.js";
import { formatSummary } from "../../../src/cli/format-summary.js";
import { callCostUsd } from "../../../src/core/llm/usage.js";
import { catalogEntry } from "../../../src/core/llm/model-catalog.js";
import type { ProviderOptions, ProviderProfile } from "../../../src/scripted/scripted-openai-server.js";
import { chestPainCase } from "../../support/sample-cases.js";
import { twoImageCase } from "../../support/two-image-case.js";
import { closedPort } from "../../support/closed-port.js";
import { checkModel } from "../../../src/core/llm/model-probe.js";
import { scriptedConfig } from "../../../src/scripted/scripted-config.js";

/**
 * A whole case under each provider the scripted server plays (src/scripted/provider-profiles.ts),
 * with nothing set beyond the model's name and the endpoint: the case completes, and once a
 * reply has revealed one of the provider's rules no later request breaks it.
 */
const servers = useScriptedServers();

beforeEach(() => {
  // Each test plays a provider afresh on the same port: what an earlier one taught is forgotten.
  forgetAdaptations();
});


async function runCase(profile: ProviderProfile, env: Record<string, string>, opts: { images?: boolean; options?: ProviderOptions; notes?: string } = {}) {
  servers.model.setProvider(profile, opts.options);
  servers.model.setScenario(clinicalScenario({ rolloutAnswers: ["B"] }));
  const cfg = servers.config(env);
  const c = opts.images ? await twoImageCase(`case-${profile}`) : { ...chestPainCase(`case-${profile}`), ...(opts.notes ? { notes: opts.notes } : {}) };
  const { result } = await new Pipeline(cfg).run(c, pipelineOptions(cfg, { k: 3 }));
  return { result, stats: servers.model.stats() };
}

describe("OpenAI reasoning models (gpt-5-mini)", () => {
  it("a whole case completes with no temperature and no max_tokens sent; reasoning tokens are counted and billed as output", async () => {
    const { result, stats } = await runCase("openai-reasoning", { MEDMMV_MODEL: "gpt-5-mini", MEDMMV_JUDGE_MODEL: "gpt-5-mini" });
    expect(result.status).toBe("completed");
    expect(stats.rules.brokenAfterReveal).toEqual([]);
    // The catalog knows gpt-5-mini takes only its default temperature: not one request was refused.
    expect(stats.log.every((l) => l.status === 200 && l.temperature === null)).toBe(true);
    expect(result.provenance.config.modelBehaviour).toMatchObject({ "gpt-5-mini": { temperature: expect.stringContaining("the model's own sampling") } });
    expect(result.usage.reasoningTokens).toBe(64 * stats.total);
    // Priced from the catalog, reasoning tokens inside completion tokens at the output rate.
    const price = catalogEntry("gpt-5-mini")!.price!;
    const byHand = stats.log.reduce((usd, l) => usd + callCostUsd(price, l.promptTokens, l.cachedTokens, l.completionTokens), 0);
    expect(result.usage.costUsd).toBeCloseTo(byHand, 6);
    expect(result.usage.costUsd).toBeGreaterThan(0);
  });

  it("MEDMMV_REASONING_EFFORT per role reaches the wire as reasoning_effort", async () => {
    const efforts = new Map<string, unknown>();
    servers.model.setProvider("openai-reasoning");
    const scenario = clinicalScenario({ rolloutAnswers: ["B"] });
    for (const agent of ["rollout", "hd-supervisor"]) {
      const own = scenario.agents[agent] as (r: import("../../../src/scripted/scripted-openai-server.js").ScriptedRequest) => unknown;
      scenario.agents[agent] = (req) => {
        efforts.set(agent, req.body.reasoning_effort);
        return own(req);
      };
    }
    servers.model.setScenario(scenario);
    const cfg = servers.config({ MEDMMV_MODEL: "gpt-5-mini", MEDMMV_JUDGE_MODEL: "o4-mini", MEDMMV_REASONING_EFFORT: "executor=high,judge=low" });
    const { result } = await new Pipeline(cfg).run(chestPainCase("case-effort"), pipelineOptions(cfg, { k: 1 }));
    expect(result.status).toBe("completed");
    expect(Object.fromEntries(efforts)).toEqual({ rollout: "high", "hd-supervisor": "low" });
  });

  it("a reasoning model the catalog does not know (a proxy's alias) learns from OpenAI's 400 and never sends a temperature again", async () => {
    const { result, stats } = await runCase("openai-reasoning", { MEDMMV_MODEL: "team-reasoner", MEDMMV_JUDGE_MODEL: "team-reasoner" });
    expect(result.status).toBe("completed");
    expect(stats.rules.revealed).toContain("temperature");
    expect(stats.rules.brokenAfterReveal).toEqual([]);
    const firstRefusal = stats.log.find((l) => l.status === 400)!;
    expect(stats.log.filter((l) => l.start > firstRefusal.end! && l.temperature !== null)).toEqual([]);
    expect(result.usage.costUsd).toBe(0); // unknown to the catalog: no invented price
  });

  it("a reply cut at its output limit is re-asked once with a larger max_completion_tokens (the name gpt-5-mini takes)", async () => {
    const budgets: unknown[] = [];
    servers.model.setProvider("openai-reasoning");
    const scenario = clinicalScenario({ rolloutAnswers: ["B"] });
    const textDoctor = scenario.agents["text-doctor"] as (r: import("../../../src/scripted/scripted-openai-server.js").ScriptedRequest) => unknown;
    scenario.agents["text-doctor"] = (req) => {
      budgets.push({ max_tokens: req.body.max_tokens, max_completion_tokens: req.body.max_completion_tokens });
      return textDoctor(req);
    };
    servers.model.setScenario(scenario);
    servers.model.addFault({ kind: "truncated-json", agent: "text-doctor", times: 1 });
    const cfg = servers.config({ MEDMMV_MODEL: "gpt-5-mini", MEDMMV_JUDGE_MODEL: "gpt-5-mini" });
    const { result } = await new Pipeline(cfg).run(chestPainCase("case-length"), pipelineOptions(cfg, { k: 1 }));
    expect(result.status).toBe("completed");
    expect(budgets).toEqual([{ max_tokens: undefined, max_completion_tokens: undefined }, { max_tokens: undefined, max_completion_tokens: 4096 }]);
    expect(servers.model.stats().rules.brokenAfterReveal).toEqual([]);
  });
});

describe("Anthropic's OpenAI-compatible endpoint", () => {
  it("with the default MEDMMV_STRUCTURED_OUTPUT, prose replies switch the model to function calling once; the case completes", async () => {
    const { result, stats } = await runCase("anthropic-compat", { MEDMMV_MODEL: "claude-sonnet-4-20250514", MEDMMV_JUDGE_MODEL: "claude-sonnet-4-20250514" });
    expect(result.status).toBe("completed");
    expect(stats.rules.revealed).toEqual(["response_format"]);
    expect(stats.rules.brokenAfterReveal).toEqual([]);
    expect(result.provenance.config.modelBehaviour).toMatchObject({
      "claude-sonnet-4-20250514": { structuredOutput: { mode: "functionCalling", switchedBecause: [expect.stringContaining("prose")] } },
    });
    expect(stats.log.filter((l) => l.mode === "tool").length).toBeGreaterThan(0);
  });
});

describe("vLLM with --limit-mm-per-prompt image=1", () => {
  it("a two-image case completes: after the 400 that states the limit, every request carries one composed picture", async () => {
    const { result, stats } = await runCase("vllm", { MEDMMV_MODEL: "Qwen2.5-VL-7B-Instruct", MEDMMV_JUDGE_MODEL: "Qwen2.5-VL-7B-Instruct" }, { images: true });
    expect(result.status).toBe("completed");
    expect(stats.rules.revealed).toEqual(["images"]);
    expect(stats.rules.brokenAfterReveal).toEqual([]);
    expect(stats.log.filter((l) => l.status === 200).every((l) => l.images <= 1)).toBe(true);
    expect(stats.log.some((l) => l.status === 200 && l.images === 1)).toBe(true);
    expect(result.provenance.config.modelBehaviour).toMatchObject({ "Qwen2.5-VL-7B-Instruct": { imagesPerRequest: 1 } });
    expect(result.provenance.failures ?? []).toEqual([]);
  });

  it("a profile that states the limit sends one picture from the first request", async () => {
    const { result, stats } = await runCase(
      "vllm",
      { MEDMMV_MODEL: "qwen-vl", MEDMMV_JUDGE_MODEL: "qwen-vl", MEDMMV_MODEL_PROFILES: JSON.stringify({ "qwen-vl": { imagesPerRequest: 1 } }) },
      { images: true },
    );
    expect(result.status).toBe("completed");
    expect(stats.log.every((l) => l.status === 200 && l.images <= 1)).toBe(true);
  });
});

describe("Ollama", () => {
  it("a two-image case completes under one image per message", async () => {
    const { result, stats } = await runCase("ollama", { MEDMMV_MODEL: "llama3.2-vision", MEDMMV_JUDGE_MODEL: "llama3.2-vision" }, { images: true });
    expect(result.status).toBe("completed");
    expect(stats.rules.brokenAfterReveal).toEqual([]);
    expect(result.usage.costUsd).toBe(0);
  });
});

describe("Azure OpenAI's content filter", () => {
  const azure = () => ({
    AZURE_OPENAI_API_KEY: "az-key",
    AZURE_OPENAI_ENDPOINT: servers.model.baseUrl.replace(/\/v1$/, ""),
    MEDMMV_MODEL: "gpt-4o",
    MEDMMV_JUDGE_MODEL: "gpt-4o",
  });
  const overdose =
    "A 24-year-old woman reports an intentional overdose of acetaminophen 6 hours ago. She is nauseated. AST and ALT are normal; the 4-hour paracetamol level was 180 mg/L.";

  it("an overdose case: CONTENT_FILTERED with self_harm in the result and the CLI summary, one call per agent, nothing retried", async () => {
    const { result, stats } = await runCase("azure", azure(), { notes: overdose });
    expect(result.status).toBe("failed");
    expect(result.error).toMatchObject({ code: "CONTENT_FILTERED", message: expect.stringContaining("self_harm: medium") });
    const filtered = (result.provenance.failures ?? []).filter((f) => f.code === "CONTENT_FILTERED");
    expect(filtered.length).toBeGreaterThan(0);
    for (const f of filtered) expect(f.message).toContain("self_harm: medium");
    expect(formatSummary(result)).toMatch(/CONTENT_FILTERED\] .*self_harm: medium/);
    // k rollouts, one call each; every other agent at most once: a filtered prompt is not retried.
    for (const [agent, n] of Object.entries(stats.byAgent)) expect(n).toBeLessThanOrEqual(agent === "rollout" ? 3 : 1);
    expect(stats.log.every((l) => l.status === 400)).toBe(true);
  });

  it("a reply the filter stops (200, finish_reason content_filter, no content) is CONTENT_FILTERED, not re-asked", async () => {
    const { result, stats } = await runCase("azure", azure(), { options: { completionFilter: /"paths"|"steps"/ } });
    const filtered = (result.provenance.failures ?? []).filter((f) => f.code === "CONTENT_FILTERED");
    expect(filtered.map((f) => f.branch).sort()).toEqual(["rollout-0", "rollout-1", "rollout-2"]);
    expect(filtered[0]!.message).toContain("refused the reply (self_harm: medium)");
    expect(stats.byAgent.rollout).toBe(3);
  });
});

describe("medmmv models check", () => {
  const probeScenario = { agents: { "models-check": { ok: true } } };
  const check = async (profile: ProviderProfile, env: Record<string, string> = {}, options?: ProviderOptions) => {
    servers.model.setProvider(profile, options);
    servers.model.setScenario(probeScenario);
    const cfg = servers.config({ MEDMMV_MODEL: "probe-model", ...env });
    return checkModel(cfg.llm, cfg.llm.models.executor!);
  };

  it.each([
    ["openai", { temperature: true, structuredOutput: { jsonSchema: true, functionCalling: true, jsonMode: true }, imagesPerRequest: null, reasoning: false, tokenParameter: "max_tokens" }],
    ["openai-reasoning", { temperature: false, structuredOutput: { jsonSchema: true, functionCalling: true, jsonMode: true }, imagesPerRequest: null, reasoning: true, tokenParameter: "max_completion_tokens" }],
    ["anthropic-compat", { temperature: true, structuredOutput: { jsonSchema: false, functionCalling: true, jsonMode: false }, imagesPerRequest: null, reasoning: false, tokenParameter: "max_tokens" }],
    ["vllm", { temperature: true, structuredOutput: { jsonSchema: true, functionCalling: true, jsonMode: true }, imagesPerRequest: 1, reasoning: false, tokenParameter: "max_tokens" }],
    ["ollama", { temperature: true, structuredOutput: { jsonSchema: true, functionCalling: true, jsonMode: true }, imagesPerRequest: 1, reasoning: false, tokenParameter: "max_tokens" }],
  ] as const)("under %s it reports what the provider allows, in at most 11 requests", async (profile, expected) => {
    const c = await check(profile);
    expect(c).toMatchObject({ ...expected, problem: null });
    expect(c.requests).toBeLessThanOrEqual(11);
    // The long probe: Ollama's 4k default cuts it silently (a window of about half its size kept); the others read it whole.
    expect(c.contextWindow).toEqual(profile === "ollama" ? { tokens: 2050, truncates: true, probedTokens: expect.any(Number) } : { tokens: null, truncates: false, probedTokens: expect.any(Number) });
    expect(servers.model.stats().total).toBe(c.requests);
    expect(c.settings.MEDMMV_STRUCTURED_OUTPUT).toBe(profile === "anthropic-compat" ? "functionCalling" : "jsonSchema");
  });

  it("a transient 503 is retried before it is read as a missing capability; a text-only model's 0 images and a window are written to the profile", async () => {
    // The tools probe (the 4th request) meets one 503: still functionCalling yes.
    servers.model.addFault({ kind: "status", status: 503, agent: "models-check", callIndex: 3, times: 1 });
    const flaky = await check("openai");
    expect(flaky.structuredOutput).toEqual({ jsonSchema: true, functionCalling: true, jsonMode: true });
    servers.model.clearFaults();
    servers.model.reset();
    const deepseek = await check("deepseek", { MEDMMV_MODEL: "deepseek-v4-flash" });
    expect(deepseek.imagesPerRequest).toBe(0);
    expect(JSON.parse(deepseek.settings.MEDMMV_MODEL_PROFILES!)).toMatchObject({ "deepseek-v4-flash": { imagesPerRequest: 0, structuredOutput: ["functionCalling", "jsonMode"] } });
    servers.model.reset();
    const llama = await check("llamacpp", { MEDMMV_MODEL: "qwen" });
    expect(llama.contextWindow).toMatchObject({ tokens: 4096, truncates: false });
    expect(JSON.parse(llama.settings.MEDMMV_MODEL_PROFILES!)).toMatchObject({ qwen: { contextWindow: 4096, imagesPerRequest: 0 } });
    // What models check writes is a profile the configuration takes.
    expect(() => servers.config({ MEDMMV_MODEL: "qwen", MEDMMV_MODEL_PROFILES: llama.settings.MEDMMV_MODEL_PROFILES! })).not.toThrow();
  });

  it("under azure (its deployment route and api-key) everything a plain prompt needs works", async () => {
    const c = await check("azure", { AZURE_OPENAI_API_KEY: "az-key", AZURE_OPENAI_ENDPOINT: servers.model.baseUrl.replace(/\/v1$/, "") });
    expect(c).toMatchObject({ temperature: true, structuredOutput: { jsonSchema: true, functionCalling: true, jsonMode: true }, problem: null });
    expect(servers.model.stats().log.every((l) => l.url.startsWith("/openai/deployments/probe-model/chat/completions"))).toBe(true);
  });

  it("tells a wrong URL, a refused key and a wrong path apart from a missing capability, after one request", async () => {
    const port = await closedPort();
    const unreachable = await checkModel(scriptedConfig(`http://127.0.0.1:${port}/v1`, { MEDMMV_MODEL: "m" }).llm, "m");
    expect(unreachable.problem?.kind).toBe("unreachable");
    expect(unreachable.problem?.message).toContain("OPENAI_BASE_URL");
    servers.model.setScenario(probeScenario);
    const wrongPath = await checkModel(scriptedConfig(servers.model.baseUrl.replace(/\/v1$/, ""), { MEDMMV_MODEL: "m" }).llm, "m");
    expect(wrongPath).toMatchObject({ problem: { kind: "not-found" }, requests: 1, structuredOutput: null });
    servers.model.addFault({ kind: "status", status: 401 });
    const badKey = await checkModel(servers.config().llm, "m");
    expect(badKey).toMatchObject({ problem: { kind: "unauthorized" }, requests: 1, temperature: null });
    expect(badKey.problem?.message).toContain("OPENAI_API_KEY");
  });

  it("sends a prefixed model by its own name, and does not send Claude or Gemini through the chat-completions endpoint", async () => {
    const c = await check("openai-reasoning", { MEDMMV_MODEL: "openai:probe-model" });
    expect(c).toMatchObject({ model: "openai:probe-model", temperature: false, problem: null });
    expect(servers.model.stats().log.every((l) => l.model === "probe-model")).toBe(true);
    servers.model.reset();
    servers.model.setProvider("openai");
    // Claude goes through its own integration, to the Messages API (test/core/llm/models-check-integrations.test.ts).
    const claude = await checkModel(servers.config({ MEDMMV_MODEL: "anthropic:claude-sonnet-4-5", ANTHROPIC_API_KEY: "k", ANTHROPIC_BASE_URL: servers.model.baseUrl.replace(/\/v1$/, "") }).llm, "anthropic:claude-sonnet-4-5");
    expect(claude).toMatchObject({ via: "integration", problem: null });
    const messages = servers.model.vendors.anthropic.calls();
    expect(messages).toHaveLength(claude.requests);
    // The chat-completions route saw only the Messages route's relays of them: no request of the check's own.
    expect(servers.model.stats().total).toBe(messages.length);
  });
});
