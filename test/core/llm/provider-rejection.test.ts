import { describe, expect, it } from "vitest";
import { readRejection, rejectionOf } from "../../../src/core/llm/provider-rejection.js";
import { classifyError } from "../../../src/core/llm/retry.js";
import { parseGoDuration, statedWaitMs } from "../../../src/core/llm/rate-limit-hints.js";
import { truncatedPrompt } from "../../../src/core/llm/context-truncation.js";
import { UsageMeter } from "../../../src/core/llm/usage.js";

/** Each provider's refusal, in the body shape it documents (sources in provider-rejection.ts), read to one typed reason. */
describe("readRejection", () => {
  it("context refusals of llama.cpp, TGI, Gemini (an array) and OpenAI, with both sizes where stated", () => {
    expect(readRejection(400, { error: { code: 400, message: "the request exceeds the available context size, try increasing it", type: "exceed_context_size_error", n_prompt_tokens: 14429, n_ctx: 8192 } })).toMatchObject({ kind: "contextLength", window: 8192, requested: 14429 });
    expect(readRejection(422, { error: "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000 `inputs` tokens and 200 `max_new_tokens`", error_type: "validation" })).toMatchObject({ kind: "contextLength", window: 4096, requested: 4000 });
    // Amazon Bedrock's exceptions, as the AWS SDK throws them (name = the code, $metadata.httpStatusCode).
    const aws = (name: string, status: number, message: string) => Object.assign(new Error(message), { name, $fault: "client", $metadata: { httpStatusCode: status } });
    expect(rejectionOf(aws("ValidationException", 400, "The model returned the following errors: Input is too long for requested model."))).toMatchObject({ kind: "contextLength", window: null });
    expect(rejectionOf(aws("ServiceQuotaExceededException", 400, "Your request exceeds the service quota for your account."))).toMatchObject({ kind: "quota", code: "ServiceQuotaExceededException" });
    expect(rejectionOf(aws("ThrottlingException", 429, "Too many requests, please wait before trying again."))).toBeNull();
    // A model the project has no quota for at all: limit 0, whatever retryDelay comes with it (google-gemini/gemini-cli#22486).
    const zero = { error: { code: 429, status: "RESOURCE_EXHAUSTED", message: "You exceeded your current quota, please check your plan and billing details.\n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 0, model: gemini-3.1-pro\nPlease retry in 25.465784708s." } };
    expect(readRejection(429, zero)).toMatchObject({ kind: "quota", code: "no_quota_for_model" });
    expect(readRejection(429, { error: { ...zero.error, message: "* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 15, model: gemini-2.5-flash" } })).toBeNull();
    // Anthropic's body as its SDK's fetch sees it.
    expect(readRejection(400, { type: "error", error: { type: "invalid_request_error", message: "prompt is too long: 208310 tokens > 200000 maximum" }, request_id: "req_1" })).toMatchObject({ kind: "contextLength", window: 200000, requested: 208310 });
    const gemini = [{ error: { code: 400, message: "The input token count (134123) exceeds the maximum number of tokens allowed (131072).", status: "INVALID_ARGUMENT" } }];
    expect(readRejection(400, gemini)).toMatchObject({ kind: "contextLength", window: 131072, requested: 134123 });
    expect(readRejection(400, { error: { message: "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.", code: "context_length_exceeded" } })).toMatchObject({ kind: "contextLength", window: 8192, requested: 9000 });
  });

  it("images on a text-only model: DeepSeek's 400 and llama.cpp's 500 without --mmproj", () => {
    expect(readRejection(400, { error: { message: "Failed to deserialize the JSON body into the target type: messages[1]: unknown variant `image_url`, expected `text` at line 1 column 679289", type: "invalid_request_error", param: null, code: "invalid_request_error" } })).toMatchObject({ kind: "noImages" });
    expect(readRejection(500, { error: { code: 500, message: "image input is not supported - hint: if this is unexpected, you may need to provide the mmproj", type: "server_error" } })).toMatchObject({ kind: "noImages" });
  });

  it("TGI's plain-text 422 naming response_format is a structured-output refusal; DeepSeek's reasoner refuses tools in words", () => {
    expect(readRejection(422, "Failed to deserialize the JSON body into the target type: response_format: unknown variant `json_schema`, expected `json` or `regex` at line 1 column 80")).toMatchObject({ kind: "structuredOutput", parameter: "response_format" });
    expect(readRejection(400, { error: { message: "deepseek-reasoner does not support Function Calling", type: "invalid_request_error", code: "invalid_request_error" } })).toMatchObject({ kind: "structuredOutput", parameter: "tools" });
  });

  it("Gemini's safety blocks (Vertex AI, Gemini API): a blocked prompt or a reply finished for SAFETY is a content filter with the blocked categories", () => {
    const prompt = { promptFeedback: { blockReason: "PROHIBITED_CONTENT", safetyRatings: [{ category: "HARM_CATEGORY_DANGEROUS_CONTENT", probability: "HIGH", blocked: true }, { category: "HARM_CATEGORY_HARASSMENT", probability: "NEGLIGIBLE" }] } };
    expect(readRejection(200, { error: prompt })).toMatchObject({ kind: "contentFilter", categories: [{ category: "HARM_CATEGORY_DANGEROUS_CONTENT", severity: "HIGH" }], provider: "Google's safety filters" });
    const reply = { candidates: [{ finishReason: "SAFETY", safetyRatings: [{ category: "HARM_CATEGORY_SEXUALLY_EXPLICIT", severity: "HARM_SEVERITY_MEDIUM", blocked: true }] }] };
    expect(readRejection(200, reply)).toMatchObject({ kind: "contentFilter", categories: [{ category: "HARM_CATEGORY_SEXUALLY_EXPLICIT", severity: "HARM_SEVERITY_MEDIUM" }] });
    // A reply that stopped for its length or ended normally is no block.
    expect(readRejection(200, { candidates: [{ finishReason: "MAX_TOKENS" }] })).toBeNull();
    expect(readRejection(200, { candidates: [{ finishReason: "STOP" }] })).toBeNull();
  });

  it("quota (a billing stop) and moderation, never a rate limit", () => {
    expect(readRejection(429, { error: { message: "You exceeded your current quota, please check your plan and billing details.", type: "insufficient_quota", param: null, code: "insufficient_quota" } })).toMatchObject({ kind: "quota", code: "insufficient_quota" });
    expect(readRejection(402, { error: { code: 402, message: "Insufficient credits." } })).toMatchObject({ kind: "quota" });
    expect(readRejection(429, { error: { message: "Rate limit reached for requests", type: "requests", code: "rate_limit_exceeded" } })).toBeNull();
    expect(readRejection(403, { error: { code: 403, message: "Your chosen model requires moderation and your input was flagged", metadata: { reasons: ["self-harm", "violence"], flagged_input: "…", provider_name: "OpenAI" } } })).toMatchObject({
      kind: "contentFilter",
      categories: [{ category: "self-harm" }, { category: "violence" }],
      provider: "the moderation of OpenAI",
    });
    expect(readRejection(400, { error: { message: "flagged", moderation: { flagged: true, categories: {} } } })).toMatchObject({ kind: "contentFilter" });
  });

  it("Gemini's per-day quota (QuotaFailure PerDay) is a quota, in an array or an object body; a per-minute one alone is a rate limit", () => {
    // As Google sends it (a real body: QuotaFailure, Help, and a RetryInfo of seconds all the same).
    const error = (quotaId: string, quotaMetric = "generativelanguage.googleapis.com/generate_content_free_tier_requests") => ({
      code: 429,
      message: "You exceeded your current quota, please check your plan and billing details.",
      status: "RESOURCE_EXHAUSTED",
      details: [
        { "@type": "type.googleapis.com/google.rpc.QuotaFailure", violations: [{ quotaMetric, quotaId, quotaDimensions: { location: "global", model: "gemini-2.5-flash" }, quotaValue: "250" }] },
        { "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "22s" },
      ],
    });
    const daily = "GenerateRequestsPerDayPerProjectPerModel-FreeTier";
    expect(readRejection(429, [{ error: error(daily) }])).toMatchObject({ kind: "quota", code: daily, period: "day" });
    expect(readRejection(429, { error: error(daily) })).toMatchObject({ kind: "quota", code: daily, period: "day" });
    expect(readRejection(429, { error: error("GenerateRequestsPerDayPerProjectPerModel", "generativelanguage.googleapis.com/generate_requests_per_model_per_day") })).toMatchObject({ kind: "quota", period: "day" });
    expect(readRejection(429, [{ error: error("GenerateRequestsPerMinutePerProjectPerModel-FreeTier") }])).toBeNull();
    // Both at once (gemini-cli#8437): the daily one decides, for waiting out the minute would not help.
    const both = error("GenerateRequestsPerMinutePerProjectPerModel-FreeTier");
    (both.details[0] as { violations: unknown[] }).violations.push({ quotaMetric: "generativelanguage.googleapis.com/generate_content_free_tier_requests", quotaId: daily });
    expect(readRejection(429, { error: both })).toMatchObject({ kind: "quota", code: daily, period: "day" });
    // Gemini's own SDK keeps the status and the details, not the body (GoogleGenerativeAIFetchError).
    const sdkError = Object.assign(new Error("[GoogleGenerativeAI Error]: Error fetching from …: [429 Too Many Requests] You exceeded your current quota"), { status: 429, statusText: "Too Many Requests", errorDetails: error(daily).details });
    expect(rejectionOf(sdkError)).toMatchObject({ kind: "quota", period: "day" });
    expect(classifyError(Object.assign(new Error("429"), { status: 429, errorDetails: error("GenerateRequestsPerMinutePerProjectPerModel-FreeTier").details }), false)).toMatchObject({ retryable: true, retryAfterMs: 22_000 });
  });
});

describe("a refusing server's stated wait", () => {
  it("reads Go durations, the later of x-ratelimit-reset-*, and Gemini's RetryInfo in an array body", () => {
    expect(parseGoDuration("6m0s")).toBe(360_000);
    expect(parseGoDuration("1m26.4s")).toBe(86_400);
    expect(parseGoDuration("20ms")).toBe(20);
    expect(parseGoDuration("7")).toBe(7000);
    expect(parseGoDuration("soon")).toBeNull();
    expect(statedWaitMs(429, new Headers({ "x-ratelimit-reset-requests": "6m0s", "x-ratelimit-reset-tokens": "1s" }), null)).toBe(360_000);
    const gemini = [{ error: { code: 429, status: "RESOURCE_EXHAUSTED", details: [{ "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "38s" }] } }];
    expect(statedWaitMs(429, new Headers(), gemini)).toBe(38_000);
    expect(statedWaitMs(400, new Headers({ "x-ratelimit-reset-tokens": "1s" }), null)).toBeNull();
  });
});

describe("truncatedPrompt", () => {
  it("a reported count that cannot hold the prompt's text is a cut; a plausible one, or a short prompt, is not", () => {
    expect(truncatedPrompt(16_576, 2_050)).toMatchObject({ promptTokens: 2_050, expectedTokens: 4_144 });
    expect(truncatedPrompt(16_576, 4_144)).toBeNull();
    expect(truncatedPrompt(1_500, 100)).toBeNull();
    expect(truncatedPrompt(16_576, undefined)).toBeNull();
  });
});

describe("UsageMeter", () => {
  it("a provider's stated cost wins; a call without any price is unpriced, not free; estimates are counted", () => {
    const meter = new UsageMeter({ "gpt-4o": { input: 2.5, output: 10 } });
    meter.record({ kind: "llm", agent: "a", model: "router/model", latencyMs: 1, promptTokens: 100, completionTokens: 10, providerCostUsd: 0.0042 });
    meter.record({ kind: "llm", agent: "a", model: "unknown-model", latencyMs: 1, promptTokens: 100, completionTokens: 10 });
    meter.record({ kind: "llm", agent: "b", model: "gpt-4o", latencyMs: 1, promptTokens: 1000, completionTokens: 100, estimated: true });
    const u = meter.snapshot(0);
    expect(u.costUsd).toBeCloseTo(0.0042 + (1000 * 2.5 + 100 * 10) / 1e6, 9);
    expect(u.unpricedCalls).toBe(1);
    expect(u.estimatedCalls).toBe(1);
    expect(u.byAgent.a).toMatchObject({ unpricedCalls: 1 });
    expect(u.byAgent.b).toMatchObject({ estimatedCalls: 1 });
    expect(u.byAgent.b!.unpricedCalls).toBeUndefined();
  });
});
