import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { ChatOpenAI } from "@langchain/openai";
import { HumanMessage, SystemMessage } from "@langchain/core/messages";
import { startScriptedOpenAI, type ScriptedOpenAI } from "../support/scripted-openai-server.js";
import { testConfig } from "../support/test-config.js";
import { LlmClient } from "../../src/llm/model-client.js";
import { FairLimiter } from "../../src/llm/limiter.js";
import { CallChain, UsageMeter } from "../../src/llm/usage.js";
import { ChatCompletionsEndpoint, OPENAI_DEFAULT_BASE_URL, encodeRequest, readReplyJson } from "../../src/llm/openai-chat.js";
import { imagePart } from "../../src/llm/messages.js";

/**
 * Our client speaks the chat-completions wire format directly. These tests hold it to
 * the request LangChain's ChatOpenAI (the reference client) sends for the same call, so
 * any OpenAI-compatible server that accepts one accepts the other.
 */
const Diagnosis = z.object({ answer: z.string().describe("option letter"), confidence: z.number().describe("0..1") }).describe("the diagnosis");
let server: ScriptedOpenAI;
const bodies: Array<Record<string, unknown>> = [];

beforeAll(async () => {
  server = await startScriptedOpenAI({
    scenario: {
      agents: {
        probe: (req) => {
          bodies.push(req.body);
          return { answer: "D", confidence: 0.8 };
        },
      },
    },
  });
});
afterAll(() => server.close());

const system = "medmmv-agent: probe\nAnswer as JSON.";
const user = "Which option?";

async function ours(method: string): Promise<{ out: unknown; body: Record<string, unknown>; meter: UsageMeter }> {
  const cfg = testConfig(server.baseUrl, { MEDMMV_STRUCTURED_OUTPUT: method });
  const llm = new LlmClient(cfg.llm, new FairLimiter(4));
  const meter = new UsageMeter();
  bodies.length = 0;
  const out = await llm.structured(
    { role: "judge", agent: "probe", schema: Diagnosis, schemaName: "diagnosis", temperature: 0, messages: [{ role: "system", content: system }, { role: "user", content: user }] },
    { caseKey: "c", meter, chain: new CallChain(meter) },
  );
  return { out, body: bodies[0]!, meter };
}

async function reference(method: "jsonSchema" | "functionCalling" | "jsonMode"): Promise<Record<string, unknown>> {
  const model = new ChatOpenAI({ model: "scripted-judge", temperature: 0, apiKey: "test-key", configuration: { baseURL: server.baseUrl }, maxRetries: 0 });
  bodies.length = 0;
  await model.withStructuredOutput(Diagnosis, { method, name: "diagnosis", includeRaw: true }).invoke([new SystemMessage(system), new HumanMessage(user)]);
  return bodies[0]!;
}

describe("ChatCompletionsEndpoint through LlmClient", () => {
  it.each(["jsonSchema", "functionCalling", "jsonMode"] as const)("%s: the request carries what ChatOpenAI sends, and the reply is parsed and validated", async (method) => {
    const { out, body, meter } = await ours(method);
    const ref = await reference(method);
    expect(out).toEqual({ answer: "D", confidence: 0.8 });
    expect(body.model).toBe(ref.model);
    expect(body.temperature).toBe(ref.temperature);
    expect(body.stream).toBe(false);
    expect(body.messages).toEqual(ref.messages);
    expect(Object.keys(body).filter((k) => ["response_format", "tools", "tool_choice"].includes(k)).sort()).toEqual(
      Object.keys(ref).filter((k) => ["response_format", "tools", "tool_choice"].includes(k)).sort(),
    );
    if (method === "functionCalling") {
      expect(body.tool_choice).toEqual(ref.tool_choice);
      const [mine] = body.tools as Array<{ function: { name: string; parameters: { properties: object; required: string[] } } }>;
      const [theirs] = ref.tools as typeof mine[];
      expect(mine!.function.name).toBe(theirs!.function.name);
      expect(mine!.function.parameters.properties).toEqual(theirs!.function.parameters.properties);
      expect(mine!.function.parameters.required).toEqual(theirs!.function.parameters.required);
    } else if (method === "jsonSchema") {
      const mine = (body.response_format as { type: string; json_schema: { name: string; strict: boolean; schema: { properties: object; required: string[] } } });
      const theirs = ref.response_format as typeof mine;
      expect(mine.type).toBe("json_schema");
      expect(mine.json_schema.name).toBe("diagnosis");
      expect(mine.json_schema.strict).toBe(theirs.json_schema.strict);
      expect(mine.json_schema.schema.properties).toEqual(theirs.json_schema.schema.properties);
      expect(mine.json_schema.schema.required).toEqual(theirs.json_schema.schema.required);
    } else {
      expect(body.response_format).toEqual(ref.response_format);
    }
    // Token usage comes from the reply's usage block.
    const usage = meter.snapshot(0);
    expect(usage.promptTokens).toBeGreaterThan(0);
    expect(usage.completionTokens).toBeGreaterThan(0);
  });

  it("sends an image as an image_url part and reads the finish reason", async () => {
    const endpoint = new ChatCompletionsEndpoint(server.baseUrl + "/", "sk-test");
    bodies.length = 0;
    const reply = await endpoint.complete(
      { model: "m", temperature: 0.7, messages: [{ role: "system", content: system }, { role: "user", content: [{ type: "text", text: user }, imagePart("image/png", "iVBORw0KGgo=")] }], format: { response_format: { type: "json_object" } } },
      new AbortController().signal,
    );
    expect(reply.json).toEqual({ answer: "D", confidence: 0.8 });
    expect(reply.finishReason).toBe("stop");
    const sent = (bodies[0]!.messages as Array<{ content: unknown }>)[1]!.content;
    expect(sent).toEqual([{ type: "text", text: user }, { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } }]);
    expect(server.stats().log.at(-1)!.images).toBe(1);
  });

  it("sends the key as a bearer token (none without a key) to <base>/chat/completions", async () => {
    const seen: Array<{ url: string; auth: string | undefined; agent: string | undefined }> = [];
    const raw = http.createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        seen.push({ url: req.url ?? "", auth: req.headers.authorization, agent: req.headers["user-agent"] });
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ choices: [{ finish_reason: "stop", message: { role: "assistant", content: '{"ok":true}' } }] }));
      });
    });
    await new Promise<void>((r) => raw.listen(0, "127.0.0.1", r));
    const base = `http://127.0.0.1:${(raw.address() as AddressInfo).port}/v1`;
    try {
      const request = { model: "m", temperature: 0, messages: [{ role: "user" as const, content: "hi" }], format: {} };
      expect((await new ChatCompletionsEndpoint(base, "sk-test").complete(request, new AbortController().signal)).json).toEqual({ ok: true });
      await new ChatCompletionsEndpoint(base, null).complete(request, new AbortController().signal);
      expect(seen[0]).toMatchObject({ url: "/v1/chat/completions", auth: "Bearer sk-test" });
      expect(seen[0]!.agent).toMatch(/^medmmv\//);
      expect(seen[1]!.auth).toBeUndefined();
    } finally {
      await new Promise<void>((r) => raw.close(() => r()));
    }
  });

  it("a 200 carrying an error object and no choices is a provider fault with its status, not a reply", async () => {
    const raw = http.createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify(req.url?.includes("coded") ? { error: { message: "rate limited upstream", code: 429 } } : { error: "upstream exploded" }));
      });
    });
    await new Promise<void>((r) => raw.listen(0, "127.0.0.1", r));
    const base = `http://127.0.0.1:${(raw.address() as AddressInfo).port}`;
    try {
      const request = { model: "m", temperature: 0, messages: [{ role: "user" as const, content: "hi" }], format: {} };
      const plain = await new ChatCompletionsEndpoint(base, null).complete(request, new AbortController().signal).catch((e: unknown) => e);
      expect(plain).toMatchObject({ name: "HttpStatusError", status: 502 });
      expect((plain as Error).message).toContain("upstream exploded");
      const coded = await new ChatCompletionsEndpoint(`${base}/coded`, null).complete(request, new AbortController().signal).catch((e: unknown) => e);
      expect(coded).toMatchObject({ name: "HttpStatusError", status: 429 });
    } finally {
      await new Promise<void>((r) => raw.close(() => r()));
    }
  });

  it("defaults to api.openai.com when no base URL is set", () => {
    expect(OPENAI_DEFAULT_BASE_URL).toBe("https://api.openai.com/v1");
    expect((new ChatCompletionsEndpoint(null, "k") as unknown as { url: string }).url).toBe("https://api.openai.com/v1/chat/completions");
  });
});

describe("encodeRequest", () => {
  const reference = (req: Parameters<typeof encodeRequest>[0]) => Buffer.from(JSON.stringify({ model: req.model, temperature: req.temperature, stream: false, messages: req.messages, ...req.format }));

  it("writes the same bytes as JSON.stringify of the request, with image URLs spliced in", () => {
    const png = Buffer.from("not really a png, but bytes ✓").toString("base64");
    const jpeg = Buffer.alloc(3000, 7).toString("base64");
    const req = {
      model: "m \"quoted\"",
      temperature: 0.7,
      messages: [
        { role: "system" as const, content: 'system "quoted" \\ text with medmmv-image-0 in it' },
        { role: "user" as const, content: [{ type: "text" as const, text: "Lésion — 5 mm\n\u0000" }, imagePart("image/png", png), imagePart("image/jpeg", jpeg)] },
        { role: "assistant" as const, content: "ok" },
        // An image part not made by imagePart (not marked safe) is serialised as usual.
        { role: "user" as const, content: [{ type: "image_url" as const, image_url: { url: 'data:image/png;base64,"odd"' } }, imagePart("image/png", png)] },
      ],
      format: { response_format: { type: "json_schema", json_schema: { name: "x", strict: true, schema: { type: "object", properties: { a: { type: "string", description: "é \" ✓" } } } } } },
    };
    const bytes = encodeRequest(req);
    expect(bytes.equals(reference(req))).toBe(true);
    // Served from the caches the second time: still the same bytes.
    expect(encodeRequest(req).equals(reference(req))).toBe(true);
    expect(JSON.parse(bytes.toString()).messages[1].content[2].image_url.url).toBe(`data:image/jpeg;base64,${jpeg}`);
    // The messages the caller holds are not changed.
    expect((req.messages[1]!.content as Array<{ image_url?: { url: string } }>)[1]!.image_url!.url).toBe(`data:image/png;base64,${png}`);
  });

  it("encodes a request without images or options as plain JSON", () => {
    const req = { model: "m", temperature: 0, messages: [{ role: "user" as const, content: "hi" }], format: {} };
    expect(encodeRequest(req).toString()).toBe(reference(req).toString());
    const tools = { tools: [{ type: "function", function: { name: "f", parameters: {} } }], tool_choice: { type: "function", function: { name: "f" } } };
    expect(encodeRequest({ ...req, format: tools }).toString()).toBe(reference({ ...req, format: tools }).toString());
  });
});

describe("readReplyJson", () => {
  it("reads a tool call's arguments, a JSON content, a fenced one, or prose around an object", () => {
    expect(readReplyJson({ tool_calls: [{ function: { arguments: '{"a":1}' } }] })).toEqual({ a: 1 });
    expect(readReplyJson({ content: '{"a":2}' })).toEqual({ a: 2 });
    expect(readReplyJson({ content: 'Here:\n```json\n{"a":3}\n```' })).toEqual({ a: 3 });
    expect(readReplyJson({ content: 'The object is {"a":4}, as asked.' })).toEqual({ a: 4 });
  });

  it("gives undefined for nothing usable (the client re-asks; it never retries content)", () => {
    expect(readReplyJson(undefined)).toBeUndefined();
    expect(readReplyJson({ content: null, refusal: "I can't help with that" })).toBeUndefined();
    expect(readReplyJson({ tool_calls: [{ function: { arguments: "{oops: not json" } }] })).toBeUndefined();
    expect(readReplyJson({ content: '{"a": 1, "b": [tru' })).toBeUndefined();
    expect(readReplyJson({ content: "no json at all" })).toBeUndefined();
  });
});
