import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startScriptedOpenAI, type ScriptedOpenAI } from "../../src/scripted/scripted-openai-server.js";
import { scriptedOrigin } from "../../src/scripted/scripted-vendor-routes.js";
import { AnthropicPromptCache, minimumCacheableTokens } from "../../src/scripted/anthropic-prompt-cache.js";

/**
 * The scripted server's Anthropic Messages and Gemini generateContent endpoints, on the
 * wire: the shapes and rules each provider documents, checked with plain HTTP.
 */
let server: ScriptedOpenAI;
let origin: string;
const ANSWER = { diagnosis: "inferior MI", confidence: 0.8 };

beforeAll(async () => {
  server = await startScriptedOpenAI({ scenario: { agents: {}, fallback: ANSWER } });
  origin = scriptedOrigin(server.baseUrl);
});
afterAll(() => server.close());
beforeEach(() => {
  server.clearFaults();
  server.reset();
});

const ANTHROPIC_HEADERS = { "content-type": "application/json", "x-api-key": "k", "anthropic-version": "2023-06-01" };
const LONG = "Clinical notes. ".repeat(400); // ≈ 1600 tokens at four characters a token

function messages(body: Record<string, unknown>, headers: Record<string, string> = ANTHROPIC_HEADERS) {
  return fetch(`${origin}/v1/messages`, { method: "POST", headers, body: JSON.stringify(body) });
}

const TOOL = { name: "answer", description: "the answer", input_schema: { type: "object", properties: { diagnosis: { type: "string" } } } };

describe("scripted Anthropic Messages API", () => {
  it("answers a forced tool call with a tool_use block, stop_reason tool_use and Anthropic's usage fields", async () => {
    const res = await messages({ model: "claude-sonnet-4-5", max_tokens: 512, system: "medmmv-agent: rollout", messages: [{ role: "user", content: "case" }], tools: [TOOL], tool_choice: { type: "tool", name: "answer" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("request-id")).toMatch(/^req_/);
    const body = (await res.json()) as Record<string, any>;
    expect(body).toMatchObject({ type: "message", role: "assistant", model: "claude-sonnet-4-5", stop_reason: "tool_use", stop_sequence: null });
    expect(body.content).toEqual([{ type: "tool_use", id: expect.stringMatching(/^toolu_/), name: "answer", input: ANSWER }]);
    expect(Object.keys(body.usage).sort()).toEqual(["cache_creation_input_tokens", "cache_read_input_tokens", "input_tokens", "output_tokens"]);
    // The scenario saw the request as the agent it names.
    expect(server.stats().log[0]).toMatchObject({ agent: "rollout", mode: "tool" });
  });

  it("answers output_config json_schema (and no tools) in a text block with stop_reason end_turn", async () => {
    const res = await messages({ model: "claude-sonnet-4-5", max_tokens: 512, messages: [{ role: "user", content: "case" }], output_config: { format: { type: "json_schema", schema: { type: "object" } } } });
    const body = (await res.json()) as Record<string, any>;
    expect(body.stop_reason).toBe("end_turn");
    expect(JSON.parse(body.content[0].text)).toEqual(ANSWER);
  });

  it("refuses what Anthropic refuses, in its error shape", async () => {
    const base = { model: "claude-sonnet-4-5", max_tokens: 64, messages: [{ role: "user", content: "x" }] };
    const cases: Array<[Record<string, unknown>, Record<string, string>, number, string, RegExp]> = [
      [base, { "content-type": "application/json", "anthropic-version": "2023-06-01" }, 401, "authentication_error", /x-api-key/],
      [base, { "content-type": "application/json", "x-api-key": "k" }, 400, "invalid_request_error", /anthropic-version/],
      [{ ...base, max_tokens: undefined }, ANTHROPIC_HEADERS, 400, "invalid_request_error", /max_tokens/],
      [{ ...base, temperature: 1.5 }, ANTHROPIC_HEADERS, 400, "invalid_request_error", /temperature/],
      [{ ...base, messages: [{ role: "system", content: "x" }] }, ANTHROPIC_HEADERS, 400, "invalid_request_error", /system/],
      [
        { ...base, messages: [{ role: "user", content: Array.from({ length: 5 }, () => ({ type: "text", text: "x", cache_control: { type: "ephemeral" } })) }] },
        ANTHROPIC_HEADERS,
        400,
        "invalid_request_error",
        /maximum of 4 blocks with cache_control/,
      ],
    ];
    for (const [body, headers, status, type, message] of cases) {
      const res = await messages(body, headers);
      expect(res.status).toBe(status);
      const err = (await res.json()) as { type: string; error: { type: string; message: string } };
      expect(err.type).toBe("error");
      expect(err.error.type).toBe(type);
      expect(err.error.message).toMatch(message);
    }
    expect(server.stats().total).toBe(0);
  });

  it("turns scripted faults into Anthropic's errors: 529 overloaded_error, 429 rate_limit_error with Retry-After", async () => {
    server.addFault({ kind: "status", status: 529, times: 1 });
    server.addFault({ kind: "status", status: 429, retryAfterSec: 7, times: 1 });
    const body = { model: "claude-sonnet-4-5", max_tokens: 64, messages: [{ role: "user", content: "x" }] };
    const overloaded = await messages(body);
    expect(overloaded.status).toBe(529);
    expect(((await overloaded.json()) as { error: { type: string } }).error.type).toBe("overloaded_error");
    const limited = await messages(body);
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toBe("7");
    expect(((await limited.json()) as { error: { type: string } }).error.type).toBe("rate_limit_error");
    expect((await messages(body)).status).toBe(200);
  });

  it("caches only marked prefixes of at least the model's minimum: written once, then read", async () => {
    const marked = (variable: string) => ({
      model: "claude-sonnet-4-5",
      max_tokens: 64,
      system: [{ type: "text", text: "medmmv-agent: rollout" }],
      messages: [{ role: "user", content: [{ type: "text", text: LONG, cache_control: { type: "ephemeral" } }, { type: "text", text: variable }] }],
    });
    const usage = async (b: Record<string, unknown>) => ((await (await messages(b)).json()) as { usage: Record<string, number> }).usage;
    const first = await usage(marked("rollout 1"));
    expect(first.cache_read_input_tokens).toBe(0);
    expect(first.cache_creation_input_tokens).toBeGreaterThanOrEqual(1024);
    const second = await usage(marked("rollout 2"));
    expect(second.cache_read_input_tokens).toBe(first.cache_creation_input_tokens);
    expect(second.cache_creation_input_tokens).toBe(0);
    // The three parts add up to the same prompt.
    expect(second.input_tokens + second.cache_read_input_tokens).toBe(first.input_tokens + first.cache_creation_input_tokens);
    // Unmarked, the same prompt is not cached.
    const plain = marked("rollout 3") as { messages: Array<{ content: Array<Record<string, unknown>> }> };
    delete plain.messages[0]!.content[0]!.cache_control;
    expect((await usage(plain)).cache_read_input_tokens).toBe(0);
    expect(server.vendors.anthropic.calls().map((c) => c.cacheReadTokens > 0)).toEqual([false, true, false]);
  });
});

describe("Anthropic's prompt cache rules", () => {
  const body = (text: string, ttl?: string) => ({ messages: [{ role: "user", content: [{ type: "text", text, cache_control: { type: "ephemeral", ...(ttl ? { ttl } : {}) } }] }] });

  it("a marked prefix below the model's minimum is not cached", () => {
    expect(minimumCacheableTokens("claude-sonnet-4-5")).toBe(1024);
    expect(minimumCacheableTokens("claude-haiku-4-5")).toBe(4096);
    expect(minimumCacheableTokens("claude-3-5-haiku-latest")).toBe(2048);
    const cache = new AnthropicPromptCache();
    const short = "x".repeat(4 * 1000);
    expect(cache.use("claude-sonnet-4-5", body(short)).cacheCreationTokens).toBe(0);
    expect(cache.use("claude-sonnet-4-5", body(short)).cacheReadTokens).toBe(0);
    const long = "x".repeat(4 * 2000);
    expect(cache.use("claude-haiku-4-5", body(long)).cacheCreationTokens).toBe(0);
    expect(cache.use("claude-sonnet-4-5", body(long)).cacheCreationTokens).toBe(2000);
    // Per model: another model does not read it.
    expect(cache.use("claude-opus-4-1", body(long)).cacheReadTokens).toBe(0);
  });

  it("an entry lives 5 minutes from its last read (1 hour with ttl 1h)", () => {
    let now = 0;
    const cache = new AnthropicPromptCache(() => now);
    const long = "y".repeat(4 * 1500);
    cache.use("claude-sonnet-4-5", body(long));
    now += 4 * 60_000;
    expect(cache.use("claude-sonnet-4-5", body(long)).cacheReadTokens).toBe(1500);
    now += 4 * 60_000; // 8 minutes after writing, 4 after the read that refreshed it
    expect(cache.use("claude-sonnet-4-5", body(long)).cacheReadTokens).toBe(1500);
    now += 5 * 60_000 + 1;
    expect(cache.use("claude-sonnet-4-5", body(long)).cacheReadTokens).toBe(0);
    const hour = "z".repeat(4 * 1500);
    cache.use("claude-sonnet-4-5", body(hour, "1h"));
    now += 30 * 60_000;
    expect(cache.use("claude-sonnet-4-5", body(hour, "1h")).cacheReadTokens).toBe(1500);
  });
});

describe("scripted Gemini generateContent", () => {
  const url = (model = "gemini-2.5-flash") => `${origin}/v1beta/models/${model}:generateContent`;
  const post = (body: unknown, headers: Record<string, string> = { "content-type": "application/json", "x-goog-api-key": "g" }, model?: string) =>
    fetch(url(model), { method: "POST", headers, body: JSON.stringify(body) });

  it("answers a forced function call with a functionCall part and usageMetadata", async () => {
    const res = await post({
      systemInstruction: { parts: [{ text: "medmmv-agent: rollout" }] },
      contents: [{ role: "user", parts: [{ text: "case" }, { inlineData: { mimeType: "image/png", data: "iVBORw0KGgo=" } }] }],
      tools: [{ functionDeclarations: [{ name: "answer", parameters: { type: "object" } }] }],
      toolConfig: { functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["answer"] } },
      generationConfig: { temperature: 0.7 },
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, any>;
    expect(body.candidates[0]).toMatchObject({ content: { role: "model", parts: [{ functionCall: { name: "answer", args: ANSWER } }] }, finishReason: "STOP" });
    expect(body.usageMetadata.totalTokenCount).toBe(body.usageMetadata.promptTokenCount + body.usageMetadata.candidatesTokenCount);
    expect(server.stats().log[0]).toMatchObject({ agent: "rollout", images: 1, temperature: 0.7, model: "gemini-2.5-flash" });
    expect(server.vendors.gemini.calls()[0]).toMatchObject({ structured: "functionCall", images: 1 });
  });

  it("answers a responseSchema in a JSON text part; implicit caching reports cachedContentTokenCount on a repeated long prefix", async () => {
    const body = (tail: string) => ({ contents: [{ role: "user", parts: [{ text: LONG + tail }] }], generationConfig: { responseMimeType: "application/json", responseSchema: { type: "OBJECT" } } });
    const first = (await (await post(body("a"))).json()) as Record<string, any>;
    expect(JSON.parse(first.candidates[0].content.parts[0].text)).toEqual(ANSWER);
    expect(first.usageMetadata.cachedContentTokenCount).toBeUndefined();
    const second = (await (await post(body("b"))).json()) as Record<string, any>;
    expect(second.usageMetadata.cachedContentTokenCount).toBeGreaterThan(1000);
    expect(second.usageMetadata.cachedContentTokenCount).toBeLessThanOrEqual(second.usageMetadata.promptTokenCount);
  });

  it("refuses what Gemini refuses, in its error shape; faults keep their status", async () => {
    const ok = { contents: [{ role: "user", parts: [{ text: "x" }] }] };
    const check = async (res: Response, code: number, status: string) => {
      expect(res.status).toBe(code);
      const err = (await res.json()) as { error: { code: number; status: string; message: string } };
      expect(err.error).toMatchObject({ code, status });
      expect(err.error.message.length).toBeGreaterThan(0);
    };
    await check(await post(ok, { "content-type": "application/json" }), 403, "PERMISSION_DENIED");
    await check(await post({ contents: [] }), 400, "INVALID_ARGUMENT");
    await check(await post({ ...ok, generationConfig: { temperature: 3 } }), 400, "INVALID_ARGUMENT");
    // The key may also come as ?key=.
    expect((await fetch(`${url()}?key=g`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(ok) })).status).toBe(200);
    server.addFault({ kind: "status", status: 429, retryAfterSec: 3, times: 1 });
    const limited = await post(ok);
    expect(limited.headers.get("retry-after")).toBe("3");
    await check(limited, 429, "RESOURCE_EXHAUSTED");
  });

  it("a dropped connection upstream is a dropped connection here", async () => {
    server.addFault({ kind: "reset", times: 1 });
    await expect(post({ contents: [{ role: "user", parts: [{ text: "x" }] }] })).rejects.toThrow();
    await expect(messages({ model: "claude-sonnet-4-5", max_tokens: 8, messages: [{ role: "user", content: "x" }] }).then((r) => r.status)).resolves.toBe(200);
  });
});
