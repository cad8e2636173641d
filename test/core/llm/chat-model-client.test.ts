import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { BaseTracer, type Run } from "@langchain/core/tracers/base";
import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { AIMessage, type BaseMessage } from "@langchain/core/messages";
import type { ChatResult } from "@langchain/core/outputs";
import { startScriptedOpenAI, type ScriptedOpenAI } from "../../../src/scripted/scripted-openai-server.js";
import { MALFORMED_JSON_TEXT } from "../../../src/scripted/faults.js";
import { scriptedConfig } from "../../../src/scripted/scripted-config.js";
import { LlmClient, type LlmClientOptions } from "../../../src/core/llm/model-client.js";
import { FairLimiter } from "../../../src/core/llm/limiter.js";
import { CallChain, UsageMeter } from "../../../src/core/llm/usage.js";
import { imagePart, type ChatMessage } from "../../../src/core/llm/messages.js";
import { recordHttpRequests } from "../../support/http-requests.js";
import { MAX_REPLY_BYTES } from "../../../src/core/llm/model-fetch.js";
import { MedmmvError } from "../../../src/core/contracts/errors.js";
import { until } from "../../support/until.js";
import { rejection } from "../../support/rejection.js";
import { closedPort } from "../../support/closed-port.js";

/** LlmClient on LangChain chat models, against the scripted server over real HTTP. */
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
beforeEach(() => {
  server.clearFaults();
  server.reset();
  bodies.length = 0;
});

const system: ChatMessage = { role: "system", content: "medmmv-agent: probe\nAnswer as JSON." };
const user: ChatMessage = { role: "user", content: "Which option?" };

function client(env: Record<string, string> = {}, options: LlmClientOptions = {}, baseUrl = server.baseUrl) {
  const cfg = scriptedConfig(baseUrl, env);
  return new LlmClient(cfg.llm, new FairLimiter(4), null, options);
}
function ctx(caseKey = "c1") {
  const meter = new UsageMeter();
  return { caseKey, meter, chain: new CallChain(meter) };
}
const ask = (c: LlmClient, context = ctx(), messages: ChatMessage[] = [system, user], role: "judge" | "vision" = "judge") =>
  c.structured({ role, agent: "probe", schema: Diagnosis, schemaName: "diagnosis", temperature: 0, messages }, context);

const failure = rejection;

/** A one-off server on 127.0.0.1 answering every request with `reply(n)` (n: 0-based request count). */
async function rawServer(reply: (n: number, req: http.IncomingMessage) => { status: number; body: string; headers?: Record<string, string> }) {
  let n = 0;
  const srv = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      const r = reply(n++, req);
      res.writeHead(r.status, { "content-type": "application/json", ...r.headers });
      res.end(r.body);
    });
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const origin = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
  return { origin, requests: () => n, close: () => new Promise<void>((r) => srv.close(() => r())) };
}
const completion = (content: string) => JSON.stringify({ choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content } }], usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 } });

describe("structured output through the chat model", () => {
  it.each(["jsonSchema", "functionCalling", "jsonMode"] as const)("%s: the request has the method's shape, the reply is validated, usage is the server's", async (method) => {
    const context = ctx();
    await expect(ask(client({ MEDMMV_STRUCTURED_OUTPUT: method }), context)).resolves.toEqual({ answer: "D", confidence: 0.8 });
    const body = bodies[0]!;
    expect(body.model).toBe("scripted-judge");
    expect(body.temperature).toBe(0);
    expect(body.stream).not.toBe(true);
    expect(body.messages).toEqual([
      { role: "system", content: system.content },
      { role: "user", content: user.content },
    ]);
    if (method === "functionCalling") {
      expect(body.tool_choice).toEqual({ type: "function", function: { name: "diagnosis" } });
      const [tool] = body.tools as Array<{ function: { name: string; parameters: { required: string[] } } }>;
      expect(tool!.function.name).toBe("diagnosis");
      expect(tool!.function.parameters.required.sort()).toEqual(["answer", "confidence"]);
      expect(body.response_format).toBeUndefined();
    } else if (method === "jsonSchema") {
      const rf = body.response_format as { type: string; json_schema: { name: string; schema: { required: string[] } } };
      expect(rf.type).toBe("json_schema");
      expect(rf.json_schema.name).toBe("diagnosis");
      expect(rf.json_schema.schema.required.sort()).toEqual(["answer", "confidence"]);
      expect(body.tools).toBeUndefined();
    } else {
      expect(body.response_format).toEqual({ type: "json_object" });
    }
    const [entry] = server.stats().log;
    expect(entry!.authorization).toBe("Bearer test-key");
    const usage = context.meter.snapshot(0);
    expect(usage.llmCalls).toBe(1);
    expect(usage.promptTokens).toBe(entry!.promptTokens);
    expect(usage.completionTokens).toBe(entry!.completionTokens);
    expect(usage.promptTokens).toBeGreaterThan(0);
  });

  it("without OPENAI_API_KEY (a local server), no Authorization header is sent", async () => {
    await expect(ask(client({ OPENAI_API_KEY: "" }))).resolves.toEqual({ answer: "D", confidence: 0.8 });
    expect(server.stats().log[0]!.authorization).toBeNull();
  });

  it("sends images as image_url content parts", async () => {
    await ask(client(), ctx(), [system, { role: "user", content: [{ type: "text", text: "Look." }, imagePart("image/png", "iVBORw0KGgo=")] }], "vision");
    const sent = (bodies[0]!.messages as Array<{ content: unknown }>)[1]!.content;
    expect(sent).toEqual([{ type: "text", text: "Look." }, { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } }]);
    expect(server.stats().log[0]!.images).toBe(1);
  });

  it("usage of a reply the SDK could not parse (jsonSchema) still counts what the server reported", async () => {
    server.addFault({ kind: "malformed-json", times: 1 });
    const context = ctx();
    await expect(ask(client(), context)).resolves.toEqual({ answer: "D", confidence: 0.8 });
    const log = server.stats().log;
    expect(log).toHaveLength(2);
    const usage = context.meter.snapshot(0);
    expect(usage.llmCalls).toBe(2);
    expect(usage.promptTokens).toBe(log[0]!.promptTokens + log[1]!.promptTokens);
    expect(usage.completionTokens).toBe(log[0]!.completionTokens + log[1]!.completionTokens);
  });
});

describe("nothing leaves for the internet", () => {
  it("no tokenizer download, no tracing upload: every HTTP request of a call in each mode goes to the configured endpoint", async () => {
    const recorder = recordHttpRequests();
    try {
      for (const method of ["jsonSchema", "functionCalling", "jsonMode"]) await ask(client({ MEDMMV_STRUCTURED_OUTPUT: method }));
    } finally {
      recorder.stop();
    }
    const urls = recorder.requests.map((r) => r.url);
    expect(urls).toHaveLength(3);
    expect(urls.every((u) => u.startsWith(`${server.baseUrl}/chat/completions`))).toBe(true);
  });
});

describe("replies the SDK would take at face value", () => {
  it("a 200 carrying an error object and no choices is a provider fault, retried; a coded one keeps its status", async () => {
    const raw = await rawServer((n, req) =>
      req.url?.includes("coded")
        ? { status: 200, body: JSON.stringify({ error: { message: "rate limited upstream", code: 429 } }) }
        : n === 0
          ? { status: 200, body: JSON.stringify({ error: "upstream exploded" }) }
          : { status: 200, body: completion('{"answer":"B","confidence":0.5}') },
    );
    try {
      await expect(ask(client({}, {}, `${raw.origin}/v1`))).resolves.toEqual({ answer: "B", confidence: 0.5 });
      expect(raw.requests()).toBe(2);
      const err = await failure(ask(client({ MEDMMV_LLM_MAX_ATTEMPTS: "1" }, {}, `${raw.origin}/coded/v1`)));
      expect(err.code).toBe("LLM_RETRYABLE");
      expect(err.details).toMatchObject({ status: 429 });
      // The provider's own words stay out of the message (it reaches the case's owner); the server log has them.
      expect(err.message).not.toContain("rate limited upstream");
      expect(err.message).toContain("HTTP 429");
    } finally {
      await raw.close();
    }
  });

  it("a 2xx reply that is not JSON (a proxy's page) is retried like a 502", async () => {
    const raw = await rawServer((n) => (n === 0 ? { status: 200, body: "<html>gateway</html>", headers: { "content-type": "text/html" } } : { status: 200, body: completion('{"answer":"C","confidence":0.1}') }));
    try {
      await expect(ask(client({}, {}, `${raw.origin}/v1`))).resolves.toEqual({ answer: "C", confidence: 0.1 });
      expect(raw.requests()).toBe(2);
    } finally {
      await raw.close();
    }
  });
});

describe("reply size", () => {
  it(`a reply larger than ${MAX_REPLY_BYTES} bytes is refused as a provider fault, not buffered`, async () => {
    const big = Buffer.alloc(MAX_REPLY_BYTES + 64 * 1024, 0x20);
    const raw = await rawServer(() => ({ status: 200, body: big.toString("latin1") }));
    try {
      const err = await failure(ask(client({ MEDMMV_LLM_MAX_ATTEMPTS: "1" }, {}, `${raw.origin}/v1`)));
      expect(err.code).toBe("LLM_RETRYABLE");
      expect(err.message).toContain("HTTP 502");
    } finally {
      await raw.close();
    }
  });
});

describe("replies the SDK itself refuses (jsonSchema: its strict JSON.parse)", () => {
  it("a fenced JSON object is still read, in one call", async () => {
    const raw = await rawServer(() => ({ status: 200, body: completion('```json\n{"answer":"A","confidence":1}\n```') }));
    try {
      const context = ctx();
      await expect(ask(client({ MEDMMV_STRUCTURED_OUTPUT: "jsonSchema" }, {}, `${raw.origin}/v1`), context)).resolves.toEqual({ answer: "A", confidence: 1 });
      expect(raw.requests()).toBe(1);
      expect(context.meter.snapshot(0)).toMatchObject({ llmCalls: 1, promptTokens: 11, completionTokens: 7 });
    } finally {
      await raw.close();
    }
  });

  it("prose is re-asked; the final error says what was wrong without quoting the reply", async () => {
    server.addFault({ kind: "malformed-json" });
    const err = await failure(ask(client({ MEDMMV_STRUCTURED_OUTPUT: "jsonSchema" })));
    expect(err.code).toBe("LLM_BAD_OUTPUT");
    expect(server.stats().total).toBe(3);
    expect(err.message).toContain("not valid JSON");
    expect(err.message).not.toContain(MALFORMED_JSON_TEXT.slice(0, 20));
  });
});

describe("Azure OpenAI", () => {
  it("with AZURE_OPENAI_API_KEY, each role's model is a deployment on the Azure route, with the api-key header", async () => {
    const origin = server.baseUrl.replace(/\/v1$/, "");
    const c = client({ AZURE_OPENAI_API_KEY: "az-key", AZURE_OPENAI_ENDPOINT: origin, AZURE_OPENAI_API_VERSION: "2024-10-21" });
    await expect(ask(c)).resolves.toEqual({ answer: "D", confidence: 0.8 });
    const [entry] = server.stats().log;
    expect(entry!.url).toBe("/openai/deployments/scripted-judge/chat/completions?api-version=2024-10-21");
    expect(entry!.apiKey).toBe("az-key");
  });

  it("refuses an Azure key without an instance name or endpoint, naming both", () => {
    expect(() => scriptedConfig(server.baseUrl, { AZURE_OPENAI_API_KEY: "az-key" })).toThrow(/AZURE_OPENAI_API_INSTANCE_NAME.*AZURE_OPENAI_ENDPOINT/);
  });
});

/**
 * A tracer like LangSmith's (both are BaseTracer): it receives the finished run tree that
 * LangChainTracer would upload, here kept in memory — no network.
 */
class RecordingTracer extends BaseTracer {
  name = "recording-tracer";
  readonly roots: Run[] = [];
  constructor() {
    // Handlers run in the background by default: this one before invoke returns.
    super({ _awaitHandler: true });
  }
  protected override async persistRun(run: Run): Promise<void> {
    this.roots.push(run);
  }
}

function allRuns(run: Run): Run[] {
  return [run, ...run.child_runs.flatMap(allRuns)];
}

describe("tracing", () => {
  it("callbacks handed in as bare methods become one handler for the client, not a new one per model call", async () => {
    const seen = new Set<unknown>();
    const methods = {
      handleChatModelStart(this: unknown) {
        seen.add(this);
      },
    };
    const llm = client({}, { callbacks: [methods] });
    await ask(llm, ctx("case-a"));
    await ask(llm, ctx("case-b"));
    expect(server.stats().total).toBe(2);
    expect(seen.size).toBe(1);
    expect([...seen][0]).not.toBe(methods);
  });

  it("every model run is named medmmv.<agent> with the case id in its metadata, seen by a tracer handed in", async () => {
    const tracer = new RecordingTracer();
    await ask(client({}, { callbacks: [tracer] }), ctx("case-42"));
    expect(tracer.roots).toHaveLength(1);
    const root = tracer.roots[0]!;
    expect(root.name).toBe("medmmv.probe");
    expect(root.extra?.metadata).toMatchObject({ caseId: "case-42", agent: "probe", role: "judge", model: "scripted-judge" });
    expect(root.tags).toContain("medmmv.probe");
    // The chat model's own run (the one holding the prompt) is inside it, with the same metadata.
    const llmRuns = allRuns(root).filter((r) => r.run_type === "llm");
    expect(llmRuns).toHaveLength(1);
    expect(llmRuns[0]!.extra?.metadata).toMatchObject({ caseId: "case-42", agent: "probe" });
    expect(server.stats().total).toBe(1);
  });
});

describe("first-run failures name the fix", () => {
  it("endpoint unreachable (connection refused): names OPENAI_BASE_URL, the URL tried only in details", async () => {
    const port = await closedPort();
    const err = await failure(ask(client({ MEDMMV_LLM_MAX_ATTEMPTS: "2" }, {}, `http://127.0.0.1:${port}/v1`)));
    expect(err.message).not.toContain(`127.0.0.1:${port}`);
    expect(err.details).toMatchObject({ endpoint: `http://127.0.0.1:${port}/v1/chat/completions` });
    expect(err.message).toContain("ECONNREFUSED");
    expect(err.message).toContain("OPENAI_BASE_URL");
    expect(err.message).not.toMatch(/try again/i);
    expect(err.details).toMatchObject({ fix: expect.stringContaining("OPENAI_BASE_URL") });
  });

  it("a port fetch would refuse outright (9, discard) is tried like any other: nothing listens there, so it names OPENAI_BASE_URL", async () => {
    // Model calls do not go through fetch (model-transport.ts), whose blocked-ports list would
    // refuse port 9 before connecting; here the connection itself is refused.
    const err = await failure(ask(client({ MEDMMV_LLM_MAX_ATTEMPTS: "1" }, {}, "http://127.0.0.1:9/v1")));
    expect(err.details).toMatchObject({ endpoint: "http://127.0.0.1:9/v1/chat/completions" });
    expect(err.message).toContain("ECONNREFUSED");
    expect(err.message).toContain("OPENAI_BASE_URL");
  });

  it("endpoint host unknown (DNS): names OPENAI_BASE_URL, the URL tried only in details", async () => {
    // .invalid never resolves (RFC 6761).
    const err = await failure(ask(client({ MEDMMV_LLM_MAX_ATTEMPTS: "1" }, {}, "http://medmmv-no-such-host.invalid/v1")));
    expect(err.message).not.toContain("medmmv-no-such-host");
    expect(err.details).toMatchObject({ endpoint: "http://medmmv-no-such-host.invalid/v1/chat/completions" });
    expect(err.message).toMatch(/\((ENOTFOUND|EAI_AGAIN)\)/);
    expect(err.message).toContain("check OPENAI_BASE_URL");
  });

  it("401: the provider refused the API key, check OPENAI_API_KEY (or AZURE_OPENAI_API_KEY); not retried", async () => {
    server.addFault({ kind: "status", status: 401 });
    const err = await failure(ask(client()));
    expect(err.code).toBe("LLM_FATAL");
    expect(err.message).toContain("refused the API key");
    expect(err.message).toContain("check OPENAI_API_KEY (or AZURE_OPENAI_API_KEY)");
    expect(err.message).not.toMatch(/try again/i);
    expect(server.stats().total).toBe(1);
  });

  it("404 from /chat/completions: model X unknown to the server (the URL only in details), check MEDMMV_MODEL / MEDMMV_*_MODEL", async () => {
    server.addFault({ kind: "status", status: 404 });
    const err = await failure(ask(client()));
    expect(err.code).toBe("LLM_FATAL");
    expect(err.message).toContain(`model "scripted-judge" unknown to the server (HTTP 404)`);
    expect(err.message).not.toContain(server.baseUrl);
    expect(err.details?.endpoint).toBe(`${server.baseUrl}/chat/completions`);
    expect(err.message).toContain("check MEDMMV_MODEL / MEDMMV_*_MODEL");
    expect(err.message).toContain("MEDMMV_JUDGE_MODEL");
    expect(server.stats().total).toBe(1);
  });
});

/** A chat model of an embedding program's own, without tool calling: plain text replies. */
class TextOnlyModel extends BaseChatModel {
  calls = 0;
  seen: BaseMessage[][] = [];
  _llmType() {
    return "text-only-test-model";
  }
  async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    this.calls++;
    this.seen.push(messages);
    const message = new AIMessage({ content: '{"answer":"E","confidence":0.3}', usage_metadata: { input_tokens: 5, output_tokens: 3, total_tokens: 8 } });
    return { generations: [{ text: "", message }] };
  }
}

describe("a chat model the embedding program hands in", () => {
  it("is used for its role (any BaseChatModel), validated and metered like ours; the other roles keep the configured endpoint", async () => {
    const own = new TextOnlyModel({});
    const c = client({}, { chatModels: { judge: own } });
    const context = ctx();
    await expect(ask(c, context)).resolves.toEqual({ answer: "E", confidence: 0.3 });
    expect(own.calls).toBe(1);
    expect(server.stats().total).toBe(0);
    expect(c.models().judge).toBe("TextOnlyModel");
    expect(c.models().executor).toBe("scripted-executor");
    expect(context.meter.snapshot(0)).toMatchObject({ llmCalls: 1, promptTokens: 5, completionTokens: 3 });
  });
});

describe("one case's signal over many parallel calls", () => {
  it("aborting it closes every in-flight request at the server, and 40 calls on it raise no MaxListeners warning", async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.name);
    process.on("warning", onWarning);
    server.setLatency(60_000);
    try {
      const limiter = new FairLimiter(64);
      const wide = new LlmClient(scriptedConfig(server.baseUrl).llm, limiter);
      const ctrl = new AbortController();
      const context = { ...ctx(), signal: ctrl.signal };
      const calls = Array.from({ length: 40 }, () => ask(wide, context).then(() => null, (e: unknown) => e));
      await until(() => (server.stats().inFlight === 40 ? true : undefined), 20_000, "40 requests in flight at the server");
      ctrl.abort();
      const errors = await Promise.all(calls);
      expect(errors.every((e) => e instanceof MedmmvError && e.code === "ABORTED")).toBe(true);
      await until(() => (server.stats().disconnects === 40 ? true : undefined), 10_000, "the server to see 40 disconnects");
      expect(server.stats().inFlight).toBe(0);
      expect(server.stats().total).toBe(40);
      expect(warnings.filter((w) => w === "MaxListenersExceededWarning")).toEqual([]);
    } finally {
      server.setLatency(0);
      process.off("warning", onWarning);
    }
  });
});
