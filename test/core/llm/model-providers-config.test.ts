import { describe, expect, it } from "vitest";
import { assertLlmConfigured, loadConfig, unpricedModels } from "../../../src/core/config.js";
import { MedmmvError } from "../../../src/core/contracts/errors.js";
import { RoleModels } from "../../../src/core/llm/chat-models.js";
import { parseModelSpec, priceOf } from "../../../src/core/llm/model-spec.js";
import { CachingChatAnthropic } from "../../../src/core/llm/anthropic-chat-model.js";
import { AbortableChatGoogleGenerativeAI } from "../../../src/core/llm/gemini-chat-model.js";
import { AzureChatOpenAI, ChatOpenAI } from "@langchain/openai";

function configError(env: Record<string, string>): MedmmvError {
  try {
    loadConfig(env);
  } catch (e) {
    return e as MedmmvError;
  }
  throw new Error("expected a configuration error");
}

describe("model names with a provider prefix, as initChatModel names them", () => {
  it("reads the four providers; any other colon is part of the model's own name (Ollama's tags)", () => {
    expect(parseModelSpec("anthropic:claude-sonnet-4-5")).toEqual({ spec: "anthropic:claude-sonnet-4-5", model: "claude-sonnet-4-5", provider: "anthropic" });
    expect(parseModelSpec("google-genai:gemini-2.5-flash")).toMatchObject({ model: "gemini-2.5-flash", provider: "google-genai" });
    expect(parseModelSpec("google_genai:gemini-2.5-pro")).toMatchObject({ model: "gemini-2.5-pro", provider: "google-genai" });
    expect(parseModelSpec("openai:gpt-4o")).toMatchObject({ model: "gpt-4o", provider: "openai" });
    expect(parseModelSpec("azure_openai:my-deployment")).toMatchObject({ model: "my-deployment", provider: "azure_openai" });
    expect(parseModelSpec("qwen2.5vl:7b")).toEqual({ spec: "qwen2.5vl:7b", model: "qwen2.5vl:7b", provider: null });
    expect(parseModelSpec("Qwen2.5-VL-7B-Instruct")).toMatchObject({ provider: null });
    expect(parseModelSpec("anthropic:")).toMatchObject({ provider: null, model: "anthropic:" });
  });

  it("prices apply under the configured name or the provider's own", () => {
    const prices = { "claude-sonnet-4-5": { input: 3, output: 15 }, "google-genai:gemini-2.5-flash": { input: 0.3, output: 2.5 } };
    expect(priceOf(prices, "anthropic:claude-sonnet-4-5")).toEqual({ input: 3, output: 15 });
    expect(priceOf(prices, "google-genai:gemini-2.5-flash")?.input).toBe(0.3);
    expect(priceOf(prices, "gemini-2.5-flash")).toBeUndefined();
    expect(unpricedModels(["anthropic:claude-sonnet-4-5", "google-genai:gemini-2.5-flash", "gpt-4o"], prices)).toEqual(["gpt-4o"]);
  });
});

describe("provider settings", () => {
  it("a model of a keyed provider without its key is CONFIG_MISSING at load, naming the variable to set", () => {
    const e = configError({ MEDMMV_MODEL: "anthropic:claude-sonnet-4-5" });
    expect(e.code).toBe("CONFIG_MISSING");
    expect(e.message).toMatch(/MEDMMV_MODEL names anthropic:claude-sonnet-4-5: set ANTHROPIC_API_KEY \(or the role's own MEDMMV_EXECUTOR_API_KEY\)/);
    expect(configError({ MEDMMV_MODEL: "m", MEDMMV_VISION_MODEL: "google-genai:gemini-2.5-flash" }).message).toMatch(/GOOGLE_API_KEY \(or the role's own MEDMMV_VISION_API_KEY\)/);
    expect(configError({ MEDMMV_MODEL: "m", MEDMMV_ROLLOUT_MODELS: "m, anthropic:claude-haiku-4-5" }).message).toMatch(/MEDMMV_ROLLOUT_MODELS names anthropic:claude-haiku-4-5: set ANTHROPIC_API_KEY$/);
    // A role's own key is enough.
    expect(() => loadConfig({ MEDMMV_MODEL: "m", MEDMMV_JUDGE_MODEL: "anthropic:claude-sonnet-4-5", MEDMMV_JUDGE_API_KEY: "k" })).not.toThrow();
  });

  it("a panel of Anthropic and Gemini models needs no OpenAI-compatible endpoint; a bare model still does", () => {
    const native = { MEDMMV_MODEL: "anthropic:claude-sonnet-4-5", MEDMMV_VISION_MODEL: "google-genai:gemini-2.5-flash", ANTHROPIC_API_KEY: "a", GOOGLE_API_KEY: "g" };
    expect(() => assertLlmConfigured(loadConfig(native))).not.toThrow();
    expect(() => assertLlmConfigured(loadConfig({ ...native, MEDMMV_ROLLOUT_MODELS: "anthropic:claude-sonnet-4-5,gpt-4o" }))).toThrow(/OPENAI_BASE_URL/);
    expect(() => assertLlmConfigured(loadConfig({ ...native, MEDMMV_JUDGE_MODEL: "gpt-4o" }))).toThrow(/OPENAI_BASE_URL/);
    expect(() => assertLlmConfigured(loadConfig({ ...native, MEDMMV_JUDGE_MODEL: "gpt-4o", MEDMMV_JUDGE_BASE_URL: "http://127.0.0.1:9/v1" }))).not.toThrow();
    expect(loadConfig({ ...native, MEDMMV_ROLLOUT_MODELS: " a , ,b " }).llm.rolloutModels).toEqual(["a", "b"]);
  });
});

describe("RoleModels: each role on its own provider, endpoint and key", () => {
  const cfg = loadConfig({
    OPENAI_BASE_URL: "http://openai.test/v1",
    OPENAI_API_KEY: "openai-key",
    ANTHROPIC_API_KEY: "anthropic-key",
    ANTHROPIC_BASE_URL: "http://anthropic.test/",
    GOOGLE_API_KEY: "google-key",
    MEDMMV_MODEL: "gpt-4o",
    MEDMMV_VISION_MODEL: "google-genai:gemini-2.5-flash",
    MEDMMV_VISION_BASE_URL: "http://vision.test",
    MEDMMV_VISION_API_KEY: "vision-key",
    MEDMMV_JUDGE_MODEL: "anthropic:claude-sonnet-4-5",
    MEDMMV_JUDGE_API_KEY: "judge-key",
    MEDMMV_ROLLOUT_MODELS: "gpt-4o,anthropic:claude-sonnet-4-5,google-genai:gemini-2.5-flash",
  }).llm;
  const roles = new RoleModels(cfg);

  it("builds LangChain's own chat model for each provider", async () => {
    // Anthropic's and Gemini's integrations are loaded by `ready`, as the client does before a call.
    await Promise.all([roles.ready(roles.resolve("vision")), roles.ready(roles.resolve("judge"))]);
    expect(roles.get(roles.resolve("executor"), 0.7)).toBeInstanceOf(ChatOpenAI);
    expect(roles.get(roles.resolve("vision"), 0)).toBeInstanceOf(AbortableChatGoogleGenerativeAI);
    expect(roles.get(roles.resolve("judge"), 0)).toBeInstanceOf(CachingChatAnthropic);
    // One instance per (role, model, temperature).
    expect(roles.get(roles.resolve("judge"), 0)).toBe(roles.get(roles.resolve("judge"), 0));
    expect(roles.get(roles.resolve("executor", "anthropic:claude-sonnet-4-5"), 0.7)).not.toBe(roles.get(roles.resolve("judge"), 0.7));
    const azure = new RoleModels(loadConfig({ AZURE_OPENAI_API_KEY: "az", AZURE_OPENAI_ENDPOINT: "https://r.openai.azure.com", MEDMMV_MODEL: "dep" }).llm);
    expect(azure.get(azure.resolve("executor"), 0)).toBeInstanceOf(AzureChatOpenAI);
  });

  it("a role's own URL and key apply to that role only, and a provider's key never follows a role to its own URL", () => {
    expect(roles.resolve("judge")).toMatchObject({ provider: "anthropic", model: "claude-sonnet-4-5", baseUrl: "http://anthropic.test", apiKey: "judge-key" });
    // The same model as a rollout model of the executor's: the provider's own key.
    expect(roles.resolve("executor", "anthropic:claude-sonnet-4-5")).toMatchObject({ baseUrl: "http://anthropic.test", apiKey: "anthropic-key" });
    expect(roles.resolve("vision")).toMatchObject({ provider: "google-genai", baseUrl: "http://vision.test", apiKey: "vision-key" });
    // A role's own URL without its own key: Google's key is never sent there.
    expect(configError({ GOOGLE_API_KEY: "g", MEDMMV_MODEL: "m", MEDMMV_VISION_MODEL: "google-genai:gemini-2.5-flash", MEDMMV_VISION_BASE_URL: "http://vision.test" }).message).toMatch(
      /MEDMMV_VISION_BASE_URL is set for google-genai:gemini-2.5-flash: set MEDMMV_VISION_API_KEY too/,
    );
    const keyless = new RoleModels(loadConfig({ MEDMMV_MODEL: "m", MEDMMV_JUDGE_MODEL: "local", MEDMMV_JUDGE_BASE_URL: "http://vllm.test/v1", OPENAI_API_KEY: "openai-key" }).llm);
    expect(keyless.resolve("judge")).toMatchObject({ provider: "openai", baseUrl: "http://vllm.test/v1", apiKey: null });
    expect(roles.resolve("executor")).toMatchObject({ provider: "openai", baseUrl: "http://openai.test/v1", apiKey: "openai-key" });
    expect(roles.resolve("judge").endpoint).toBe("http://anthropic.test/v1/messages");
    expect(roles.resolve("vision").endpoint).toBe("http://vision.test/v1beta/models/gemini-2.5-flash:generateContent");
  });

  it("spreads rollouts round-robin over MEDMMV_ROLLOUT_MODELS; without it, every rollout is the executor's", () => {
    expect([0, 1, 2, 3, 4].map((i) => roles.rolloutModel(i))).toEqual(["gpt-4o", "anthropic:claude-sonnet-4-5", "google-genai:gemini-2.5-flash", "gpt-4o", "anthropic:claude-sonnet-4-5"]);
    const single = new RoleModels(loadConfig({ OPENAI_BASE_URL: "http://openai.test/v1", MEDMMV_MODEL: "m" }).llm);
    expect(single.rolloutModel(3)).toBe("m");
  });

  it("asks each provider for JSON the way its integration supports", () => {
    expect(roles.resolve("executor").structuredMethod).toBeNull();
    expect(roles.resolve("judge").structuredMethod).toBe("functionCalling");
    expect(roles.resolve("vision").structuredMethod).toBe("jsonSchema");
    const fc = new RoleModels(loadConfig({ GOOGLE_API_KEY: "g", MEDMMV_MODEL: "google-genai:gemini-2.5-flash", MEDMMV_STRUCTURED_OUTPUT: "functionCalling" }).llm);
    expect(fc.resolve("executor").structuredMethod).toBe("functionCalling");
  });

  it("caps Anthropic's temperature at its maximum of 1", async () => {
    await roles.ready(roles.resolve("executor", "anthropic:claude-sonnet-4-5"));
    const m = roles.get(roles.resolve("executor", "anthropic:claude-sonnet-4-5"), 1.4) as unknown as { temperature: number };
    expect(m.temperature).toBe(1);
  });
});
