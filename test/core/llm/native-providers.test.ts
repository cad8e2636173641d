import { describe, expect, it } from "vitest";
import { useScriptedServers } from "../../support/scripted-servers-fixture.js";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import { scriptedOrigin } from "../../../src/scripted/scripted-vendor-routes.js";
import { smallPng } from "../../../src/scripted/image-bytes.js";
import { chestPainCase } from "../../support/sample-cases.js";
import { prepareCase } from "../../../src/core/intake/case-intake.js";
import type { PreparedCase } from "../../../src/core/contracts/clinical-case.js";
import { Pipeline, pipelineOptions, type PipelineOverrides } from "../../../src/core/workflow/pipeline.js";
import { DiagnosisResult } from "../../../src/core/contracts/diagnosis-result.js";
import { callCostUsd } from "../../../src/core/llm/usage.js";
import { formatSummary } from "../../../src/cli/format-summary.js";
import { rawReply } from "../../../src/scripted/scripted-openai-server.js";

/**
 * The same MedQA-style case through LangChain's own integrations, `@langchain/anthropic`
 * and `@langchain/google-genai`, against the scripted server's Messages and
 * generateContent endpoints (the real clients, over HTTP), and through a panel that spreads
 * the rollouts over three vendors.
 */
const servers = useScriptedServers();

const SONNET = "anthropic:claude-sonnet-4-5";
const FLASH = "google-genai:gemini-2.5-flash";
/** Every role on one model (the scripted config gives the judge its own otherwise). */
const allOn = (model: string) => ({ MEDMMV_MODEL: model, MEDMMV_JUDGE_MODEL: model });

function nativeEnv(env: Record<string, string>): Record<string, string> {
  const origin = scriptedOrigin(servers.model.baseUrl);
  return { ANTHROPIC_API_KEY: "sk-ant-scripted", ANTHROPIC_BASE_URL: origin, GOOGLE_API_KEY: "g-scripted", GOOGLE_GENAI_BASE_URL: origin, ...env };
}

async function withImage(): Promise<PreparedCase> {
  const base = chestPainCase("case-native-image");
  return prepareCase(
    { id: base.id, question: base.question, notes: base.notes, options: base.options, patient: base.patient, images: [{ id: "ecg1", data: smallPng(8, 8).toString("base64"), caption: "12-lead ECG" }] },
    { maxBytes: 5_000_000, maxPixels: 10_000_000, allowPath: false },
  );
}

async function runCase(env: Record<string, string>, overrides: PipelineOverrides = {}, c: PreparedCase = chestPainCase(), rolloutAnswers = ["B"]) {
  servers.model.setScenario(clinicalScenario({ rolloutAnswers }));
  const cfg = servers.config(nativeEnv(env));
  return (await new Pipeline(cfg).run(c, pipelineOptions(cfg, overrides))).result;
}

describe("Anthropic through @langchain/anthropic (scripted Messages API)", () => {
  it("runs the whole case; every call is a Messages request answered with a tool_use block", async () => {
    const result = await runCase(allOn(SONNET));
    expect(() => DiagnosisResult.parse(result)).not.toThrow();
    expect(result.status).toBe("completed");
    expect(result.answer?.option).toBe("B");
    expect(result.provenance.models).toEqual({ executor: SONNET, vision: SONNET, judge: SONNET });
    const calls = servers.model.vendors.anthropic.calls();
    expect(calls).toHaveLength(result.usage.llmCalls);
    // Every model call of the case went through the Messages route (the chat route saw only the relay).
    expect(servers.model.stats().total).toBe(calls.length);
    for (const c of calls) {
      expect(c).toMatchObject({ model: "claude-sonnet-4-5", status: 200, apiKey: "sk-ant-scripted", version: "2023-06-01", content: ["tool_use"] });
      expect(c.breakpoints).toBeGreaterThanOrEqual(2);
      expect(c.breakpoints).toBeLessThanOrEqual(4);
    }
  });

  it("counts Anthropic's cached tokens: cache_read_input_tokens become cachedPromptTokens", async () => {
    const result = await runCase(allOn(SONNET), { k: 5 });
    expect(result.status).toBe("completed");
    const calls = servers.model.vendors.anthropic.calls();
    const read = calls.reduce((n, c) => n + c.cacheReadTokens, 0);
    const written = calls.reduce((n, c) => n + c.cacheCreationTokens, 0);
    // The five rollouts share system · case · task · schema: the first writes it, the other four read it.
    expect(written).toBeGreaterThan(0);
    expect(read).toBeGreaterThan(0);
    expect(result.usage.cachedPromptTokens).toBe(read);
    const rollouts = calls.filter((c) => c.agent === "rollout");
    expect(rollouts).toHaveLength(5);
    const writes = rollouts.filter((c) => c.cacheCreationTokens > 0);
    expect(writes).toHaveLength(1);
    expect(rollouts.filter((c) => c.cacheReadTokens === writes[0]!.cacheCreationTokens)).toHaveLength(4);
    expect(result.usage.byAgent["rollout"]!.cachedPromptTokens).toBe(4 * writes[0]!.cacheCreationTokens);
    // Prompt tokens are Anthropic's three parts together (LangChain's input_tokens).
    expect(result.usage.promptTokens).toBe(calls.reduce((n, c) => n + c.inputTokens + c.cacheReadTokens + c.cacheCreationTokens, 0));
  });

  it("sends the case's image as an Anthropic image block to the vision role", async () => {
    const result = await runCase(allOn(SONNET), { k: 2 }, await withImage());
    expect(result.status).toBe("completed");
    expect(result.usage.byAgent["image-doctor"]?.calls).toBeGreaterThan(0);
    expect(servers.model.vendors.anthropic.calls().some((c) => c.images === 1)).toBe(true);
    // The relayed prompt carried the PNG itself.
    expect(servers.model.stats().log.filter((l) => l.agent === "image-doctor").every((l) => l.images === 1)).toBe(true);
  });

  it("retries a 529 overloaded_error through our retry layer, and the case completes", async () => {
    servers.model.addFault({ kind: "status", status: 529, agent: "rollout", times: 1 });
    const result = await runCase(allOn(SONNET), { k: 2 });
    expect(result.status).toBe("completed");
    expect(servers.model.vendors.anthropic.calls().filter((c) => c.status === 529)).toHaveLength(1);
    expect(result.provenance.failures).toEqual([]);
  });

  it("reads Anthropic's retry-after on a 429: one beyond our limit fails the call at once, naming the wait", async () => {
    servers.model.addFault({ kind: "status", status: 429, retryAfterSec: 90 });
    const result = await runCase({ ...allOn(SONNET), MEDMMV_LLM_MAX_RETRY_AFTER_MS: "5000" }, { k: 2 });
    expect(result.status).toBe("failed");
    const failures = result.provenance.failures ?? [];
    expect(failures.length).toBeGreaterThan(0);
    for (const f of failures) expect(f.message).toMatch(/asked to retry after 90 s/);
    // One call per branch: the wait was read from the reply, not guessed by retrying.
    expect(servers.model.vendors.anthropic.calls()).toHaveLength(failures.length);
  });

  it("re-asks after a reply that is not the tool call (prose), and the case completes", async () => {
    servers.model.addFault({ kind: "malformed-json", agent: "rollout", times: 1 });
    const result = await runCase(allOn(SONNET), { k: 2 });
    expect(result.status).toBe("completed");
    expect(servers.model.vendors.anthropic.calls().filter((c) => c.content.length === 1 && c.content[0] === "text")).toHaveLength(1);
    expect(result.usage.byAgent["rollout"]!.calls).toBe(3);
  });

  it("a refused key fails the case with a message that names ANTHROPIC_API_KEY, after one call per agent", async () => {
    servers.model.addFault({ kind: "status", status: 401 });
    const result = await runCase(allOn(SONNET), { k: 2 });
    expect(result.status).toBe("failed");
    const failures = result.provenance.failures ?? [];
    expect(failures.length).toBeGreaterThan(0);
    for (const f of failures) expect(f.message).toMatch(/HTTP 401.*ANTHROPIC_API_KEY/);
    // Not retried: 401 is not transient.
    expect(servers.model.vendors.anthropic.calls().length).toBe(failures.length);
  });
});

describe("Gemini through @langchain/google-genai (scripted generateContent)", () => {
  it("runs the whole case with responseSchema, and counts implicit-cache tokens", async () => {
    const result = await runCase(allOn(FLASH), { k: 5 });
    expect(() => DiagnosisResult.parse(result)).not.toThrow();
    expect(result.status).toBe("completed");
    expect(result.answer?.option).toBe("B");
    const calls = servers.model.vendors.gemini.calls();
    expect(calls).toHaveLength(result.usage.llmCalls);
    expect(servers.model.stats().total).toBe(calls.length);
    for (const c of calls) expect(c).toMatchObject({ model: "gemini-2.5-flash", status: 200, apiKey: "g-scripted", structured: "responseSchema" });
    expect(calls.filter((c) => c.temperature === 0.7)).toHaveLength(5);
    expect(result.usage.cachedPromptTokens).toBe(calls.reduce((n, c) => n + c.cachedTokens, 0));
    expect(result.usage.promptTokens).toBe(calls.reduce((n, c) => n + c.promptTokens, 0));
  });

  it("asks with a forced function call when MEDMMV_STRUCTURED_OUTPUT=functionCalling, and passes images as inlineData", async () => {
    const result = await runCase({ ...allOn(FLASH), MEDMMV_STRUCTURED_OUTPUT: "functionCalling" }, { k: 2 }, await withImage());
    expect(result.status).toBe("completed");
    const calls = servers.model.vendors.gemini.calls();
    expect(calls.every((c) => c.structured === "functionCall")).toBe(true);
    expect(calls.some((c) => c.images === 1)).toBe(true);
  });

  it("our per-attempt timeout ends a hung generateContent request (the abort reaches the wire), then retries", async () => {
    servers.model.addFault({ kind: "hang", agent: "rollout", times: 1 });
    const result = await runCase({ ...allOn(FLASH), MEDMMV_LLM_TIMEOUT_MS: "1500" }, { k: 2 });
    expect(result.status).toBe("completed");
    // The scripted route saw its client leave: the request was closed, not left open.
    expect(servers.model.stats().disconnects).toBeGreaterThanOrEqual(1);
    expect(servers.model.stats().log.filter((l) => l.fault === "hang").every((l) => l.disconnected)).toBe(true);
  });

  it("bills Gemini's thought tokens as output (thoughtsTokenCount, outside candidatesTokenCount)", async () => {
    servers.model.vendors.gemini.thoughtsTokens = 40;
    const result = await runCase({ ...allOn(FLASH), MEDMMV_PRICES: JSON.stringify({ "gemini-2.5-flash": { input: 0.3, output: 2.5 } }) }, { k: 2 });
    expect(result.status).toBe("completed");
    const calls = servers.model.vendors.gemini.calls();
    expect(result.usage.completionTokens).toBe(calls.reduce((n, c) => n + c.candidatesTokens + 40, 0));
    expect(result.usage.costUsd).toBeCloseTo(calls.reduce((n, c) => n + callCostUsd({ input: 0.3, output: 2.5 }, c.promptTokens, c.cachedTokens, c.candidatesTokens + 40), 0), 5);
  });

  it("a per-day quota's 429 (QuotaFailure PerDay, in the native object body) is QUOTA_EXCEEDED at once; a per-minute one is waited out by its retryDelay", async () => {
    try {
      servers.model.setProvider("gemini-openai", { dailyQuota: true });
      const daily = await runCase(allOn(FLASH), { k: 2 });
      expect(daily.status).toBe("failed");
      expect(daily.error).toMatchObject({ code: "QUOTA_EXCEEDED", message: expect.stringMatching(/daily quota.*GenerateRequestsPerDayPerProjectPerModel-FreeTier.*midnight Pacific/s) });
      // One request per agent call: the 22 s RetryInfo beside a daily quota is not waited out.
      const calls = servers.model.vendors.gemini.calls();
      expect(calls.every((c) => c.status === 429)).toBe(true);
      for (const agent of new Set(calls.map((c) => c.agent))) expect(calls.filter((c) => c.agent === agent).length).toBeLessThanOrEqual(agent === "rollout" ? 2 : 1);

      servers.model.reset();
      servers.model.setProvider("gemini-openai", { throttle: 1, retryDelay: "0.02s" });
      const perMinute = await runCase(allOn(FLASH), { k: 2 });
      expect(perMinute.status).toBe("completed");
      expect(servers.model.vendors.gemini.calls().filter((c) => c.status === 429)).toHaveLength(1);
    } finally {
      servers.model.setProvider("openai");
    }
  });

  it("retries a 503 UNAVAILABLE, and the case completes", async () => {
    servers.model.addFault({ kind: "status", status: 503, agent: "rollout", times: 1 });
    const result = await runCase(allOn(FLASH), { k: 2 });
    expect(result.status).toBe("completed");
    expect(servers.model.vendors.gemini.calls().filter((c) => c.status === 503)).toHaveLength(1);
  });
});

describe("a mixed-vendor panel", () => {
  it("three rollouts on three models: the result and the call log name each", async () => {
    const models = ["scripted-executor", SONNET, FLASH];
    const result = await runCase({ MEDMMV_ROLLOUT_MODELS: models.join(",") }, { k: 3, dedupe: false }, chestPainCase(), ["B", "A", "B"]);
    expect(result.status).toBe("completed");
    expect(result.provenance.rolloutModels).toEqual(models);
    expect(result.stability.rolloutAnswers).toEqual(["B", "A", "B"]);
    expect(result.candidates.map((c) => c.models?.rollouts)).toEqual([[models[0]], [models[1]], [models[2]]]);
    for (const c of result.candidates) expect(c.models).toMatchObject({ verdicts: "scripted-judge" });
    const rollouts = servers.model.stats().log.filter((l) => l.agent === "rollout");
    expect(rollouts.map((l) => l.model).sort()).toEqual(["claude-sonnet-4-5", "gemini-2.5-flash", "scripted-executor"]);
    expect(servers.model.vendors.anthropic.calls().map((c) => c.agent)).toEqual(["rollout"]);
    expect(servers.model.vendors.gemini.calls().map((c) => c.agent)).toEqual(["rollout"]);
    // The CLI's summary says which model gave which answer.
    expect(formatSummary(result)).toContain(`Rollout models: B ${models[0]}; A ${models[1]}; B ${models[2]}`);
  });

  it("prices each call at its own model's rate (prices keyed by the prefixed or the provider's own name)", async () => {
    const prices = { "claude-sonnet-4-5": { input: 3, cachedInput: 0.3, output: 15 }, [FLASH]: { input: 0.3, output: 2.5 } };
    const result = await runCase({ MEDMMV_ROLLOUT_MODELS: ["scripted-executor", SONNET, FLASH].join(","), MEDMMV_PRICES: JSON.stringify(prices) }, { k: 3 });
    expect(result.status).toBe("completed");
    const [a] = servers.model.vendors.anthropic.calls();
    const [g] = servers.model.vendors.gemini.calls();
    const expected =
      callCostUsd(prices["claude-sonnet-4-5"], a!.inputTokens + a!.cacheReadTokens + a!.cacheCreationTokens, a!.cacheReadTokens, a!.outputTokens) + callCostUsd(prices[FLASH], g!.promptTokens, g!.cachedTokens, g!.candidatesTokens);
    expect(expected).toBeGreaterThan(0);
    expect(result.usage.byAgent["rollout"]!.costUsd).toBeCloseTo(expected, 9);
  });

  it("each role on its own provider, endpoint and key", async () => {
    const origin = scriptedOrigin(servers.model.baseUrl);
    const result = await runCase(
      {
        MEDMMV_VISION_MODEL: FLASH,
        MEDMMV_VISION_BASE_URL: origin,
        MEDMMV_VISION_API_KEY: "vision-own-key",
        MEDMMV_JUDGE_MODEL: SONNET,
        MEDMMV_JUDGE_API_KEY: "judge-own-key",
      },
      { k: 2 },
      await withImage(),
    );
    expect(result.status).toBe("completed");
    expect(result.provenance.models).toEqual({ executor: "scripted-executor", vision: FLASH, judge: SONNET });
    const gemini = servers.model.vendors.gemini.calls();
    const anthropic = servers.model.vendors.anthropic.calls();
    expect(gemini.length).toBeGreaterThan(0);
    expect(gemini.every((c) => c.apiKey === "vision-own-key" && c.images === 1)).toBe(true);
    expect(anthropic.length).toBeGreaterThan(0);
    expect(anthropic.every((c) => c.apiKey === "judge-own-key")).toBe(true);
    for (const c of result.candidates) expect(c.models?.verdicts).toBe(SONNET);
    // The executor's rollouts stayed on the OpenAI-compatible route.
    expect(servers.model.stats().log.filter((l) => l.agent === "rollout").every((l) => l.model === "scripted-executor" && l.authorization === "Bearer test-key")).toBe(true);
  });
});

describe("a reply cut at its output budget, on every provider's own integration", () => {
  it.each([
    ["Anthropic (stop_reason max_tokens)", SONNET],
    ["Gemini (finishReason MAX_TOKENS)", FLASH],
  ])("%s is re-asked once with a larger budget, then OUTPUT_TRUNCATED (not a re-ask for invalid JSON)", async (_name, model) => {
    servers.model.addFault({ kind: "truncated-json", agent: "rollout" });
    const result = await runCase(allOn(model), { k: 1 });
    const rollout = (result.provenance.failures ?? []).find((f) => f.branch.startsWith("rollout"));
    expect(rollout?.code).toBe("OUTPUT_TRUNCATED");
    // The cut reply and the one re-ask with a larger budget: two calls, not three.
    expect(result.usage.byAgent["rollout"]!.calls).toBe(2);
  });
});

describe("Claude's own refusal (stop_reason refusal)", () => {
  it("is MODEL_REFUSED, sent once, not re-asked as a bad reply", async () => {
    const refusal = { id: "x", object: "chat.completion", model: "m", choices: [{ index: 0, message: { role: "assistant", content: "" }, finish_reason: "refusal" }], usage: { prompt_tokens: 10, completion_tokens: 0 } };
    servers.model.setScenario({ ...clinicalScenario({ rolloutAnswers: ["B"] }), agents: { ...clinicalScenario({ rolloutAnswers: ["B"] }).agents, rollout: rawReply(JSON.stringify(refusal)) } });
    const cfg = servers.config(nativeEnv(allOn(SONNET)));
    const result = (await new Pipeline(cfg).run(chestPainCase(), pipelineOptions(cfg, { k: 1 }))).result;
    expect((result.provenance.failures ?? []).find((f) => f.branch.startsWith("rollout"))?.code).toBe("MODEL_REFUSED");
    expect(result.usage.byAgent["rollout"]!.calls).toBe(1);
  });
});
