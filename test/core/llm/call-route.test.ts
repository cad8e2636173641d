import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { loadConfig } from "../../../src/core/config.js";
import { afterLesson, current, resolveCall } from "../../../src/core/llm/call-route.js";
import { RoleModels } from "../../../src/core/llm/chat-models.js";
import { LlmClient } from "../../../src/core/llm/model-client.js";
import { FairLimiter } from "../../../src/core/llm/limiter.js";
import { forgetAdaptations } from "../../../src/core/llm/model-adaptation.js";
import { CallChain, UsageMeter } from "../../../src/core/llm/usage.js";
import { PROVIDERS } from "../../../src/core/llm/providers/registry.js";
import { MODEL_PROVIDERS } from "../../../src/core/llm/model-spec.js";
import { startScriptedOpenAI, type ScriptedOpenAI } from "../../../src/scripted/scripted-openai-server.js";
import { scriptedConfig } from "../../../src/scripted/scripted-config.js";

/** One resolution per call (call-route.ts), and one module per provider (providers/registry.ts). */
const Answer = z.object({ answer: z.string(), confidence: z.number() });
let server: ScriptedOpenAI;

beforeAll(async () => {
  server = await startScriptedOpenAI({ scenario: { agents: { probe: () => ({ answer: "B", confidence: 0.7 }) } } });
});
afterAll(() => server.close());
beforeEach(() => {
  forgetAdaptations();
  server.reset();
  server.clearFaults();
});

const messages = [
  { role: "system" as const, content: "medmmv-agent: probe\nAnswer as JSON." },
  { role: "user" as const, content: "Which option?" },
];
function context() {
  const meter = new UsageMeter();
  return { caseKey: "c1", meter, chain: new CallChain(meter) };
}

describe("a call's model is resolved once", () => {
  it("calls to a model resolve it once for the client, however many attempts and re-asks they make", async () => {
    const resolutions = vi.spyOn(PROVIDERS.openai, "defaults");
    try {
      const client = new LlmClient(scriptedConfig(server.baseUrl).llm, new FairLimiter(4), null);
      for (let i = 0; i < 3; i++) await client.structured({ role: "judge", agent: "probe", schema: Answer, schemaName: "answer", temperature: 0, messages }, context());
      expect(resolutions).toHaveBeenCalledTimes(1);
      // Another model of the role's calls (a rollout model) is a resolution of its own.
      await client.structured({ role: "judge", agent: "probe", schema: Answer, schemaName: "answer", temperature: 0, messages, model: "other-model" }, context());
      expect(resolutions).toHaveBeenCalledTimes(2);
    } finally {
      resolutions.mockRestore();
    }
  });

  it("a lesson gives a new value; the value the call had is unchanged, and an unchanged server gives the same value back", () => {
    const cfg = loadConfig({ OPENAI_BASE_URL: "http://lesson.test/v1", MEDMMV_MODEL: "team-model" }).llm;
    const before = resolveCall(cfg, "executor", "team-model", false);
    expect(current(before)).toBe(before);
    expect(before).toMatchObject({ provider: "openai", endpoint: "http://lesson.test/v1/chat/completions", mode: "jsonSchema", tokenParameter: "max_tokens", imagesPerRequest: null, price: null });
    const after = afterLesson(before, { kind: "structuredOutput", failed: "jsonSchema", why: "the server refused response_format" });
    expect(after).not.toBeNull();
    expect(after!.mode).toBe("functionCalling");
    expect(after!.adaptation?.structuredOutput?.mode).toBe("functionCalling");
    expect(before.mode).toBe("jsonSchema");
    // What was learned holds for the process: a later resolution starts from it, and the same lesson again teaches nothing.
    expect(current(before)).toMatchObject({ mode: "functionCalling" });
    expect(resolveCall(cfg, "executor", "team-model", false).mode).toBe("functionCalling");
    expect(afterLesson(after!, { kind: "structuredOutput", failed: "jsonSchema", why: "again" })).toBeNull();
  });

  it("the usage meter prices a call at its resolved price", async () => {
    const client = new LlmClient(scriptedConfig(server.baseUrl, { MEDMMV_PRICES: JSON.stringify({ "scripted-judge": { input: 1, output: 2 } }) }).llm, new FairLimiter(4), null);
    // A meter without a price table of its own: the call's price comes with the call.
    const ctx = context();
    await client.structured({ role: "judge", agent: "probe", schema: Answer, schemaName: "answer", temperature: 0, messages }, ctx);
    const u = ctx.meter.snapshot(0);
    expect(u.unpricedCalls).toBeUndefined();
    expect(u.costUsd).toBeCloseTo((u.promptTokens * 1 + u.completionTokens * 2) / 1e6, 12);
    expect(u.costUsd).toBeGreaterThan(0);
  });
});

describe("a model that takes no images, whatever its wire", () => {
  it("a profile's imagesPerRequest: 0 holds for a model on its provider's own integration (Bedrock, Vertex AI), which no other profile field reaches", () => {
    const llama = "bedrock:meta.llama3-70b-instruct-v1:0";
    const cfg = loadConfig({ MEDMMV_MODEL: llama, MEDMMV_JUDGE_MODEL: "google-vertexai:gemini-2.5-flash", AWS_REGION: "us-east-1", GOOGLE_CLOUD_PROJECT: "p", MEDMMV_MODEL_PROFILES: JSON.stringify({ [llama]: { imagesPerRequest: 0 } }), MEDMMV_LOG_LEVEL: "silent" }).llm;
    const text = resolveCall(cfg, "executor", llama, false);
    expect(text).toMatchObject({ provider: "bedrock", profile: null, imagesPerRequest: 0 });
    // It survives what the server teaches (a new value from the same rules).
    expect(current(text).imagesPerRequest).toBe(0);
    expect(resolveCall(cfg, "judge", "google-vertexai:gemini-2.5-flash", false).imagesPerRequest).toBeNull();
  });
});

describe("the provider registry", () => {
  it("has one module for every provider a model name may be prefixed with, under its own name", () => {
    expect(Object.keys(PROVIDERS).sort()).toEqual([...MODEL_PROVIDERS].sort());
    for (const [id, module] of Object.entries(PROVIDERS)) expect(module.id).toBe(id);
  });

  it("each provider's endpoint and failure variables, with a role's own URL and key applying to that role only", () => {
    const cfg = loadConfig({
      OPENAI_API_KEY: "o",
      ANTHROPIC_API_KEY: "a",
      GOOGLE_API_KEY: "g",
      AWS_REGION: "eu-west-1",
      MEDMMV_MODEL: "bedrock:anthropic.claude-3-5-sonnet-20240620-v1:0",
      MEDMMV_VISION_MODEL: "google-genai:gemini-2.5-flash",
      MEDMMV_JUDGE_MODEL: "anthropic:claude-sonnet-4-5",
    }).llm;
    const roles = new RoleModels(cfg);
    expect(roles.resolve("executor")).toMatchObject({
      provider: "bedrock",
      model: "anthropic.claude-3-5-sonnet-20240620-v1:0",
      endpoint: "https://bedrock-runtime.eu-west-1.amazonaws.com/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse",
      structuredMethod: "functionCalling",
      profile: null,
      failure: { azure: false, variables: { url: "MEDMMV_BEDROCK_ENDPOINT / AWS_REGION (or MEDMMV_EXECUTOR_BASE_URL)" } },
    });
    expect(roles.resolve("vision")).toMatchObject({ endpoint: "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent", failure: { variables: { key: "GOOGLE_API_KEY (or MEDMMV_VISION_API_KEY)" } } });
    expect(roles.resolve("judge")).toMatchObject({ endpoint: "https://api.anthropic.com/v1/messages", apiKey: "a" });
    expect(roles.resolve("judge", "gpt-4o")).toMatchObject({ provider: "openai", endpoint: "https://api.openai.com/v1/chat/completions", apiKey: "o", structuredMethod: null, failure: { azure: false } });
    const azure = new RoleModels(loadConfig({ AZURE_OPENAI_API_KEY: "az", AZURE_OPENAI_API_INSTANCE_NAME: "res", MEDMMV_MODEL: "dep" }).llm);
    expect(azure.resolve("executor")).toMatchObject({ provider: "azure_openai", endpoint: "https://res.openai.azure.com/openai/deployments/dep/chat/completions", failure: { azure: true } });
  });
});
