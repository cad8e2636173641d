import { HumanMessage, SystemMessage } from "@langchain/core/messages";
import { ChatOpenAI } from "@langchain/openai";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";

import { FaultPlan, nowMs } from "../../src/scripted/faults.js";
import {
  rawReply,
  startScriptedOpenAI,
  type ScriptedOpenAI,
  type ScriptedOpenAIOptions,
  type ScriptedRequest,
} from "../../src/scripted/scripted-openai-server.js";
import { defaultTavilyResults, startScriptedTavily, type ScriptedTavily } from "../../src/scripted/scripted-tavily-server.js";

const open: Array<{ close(): Promise<void> }> = [];

afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

async function openai(opts: ScriptedOpenAIOptions): Promise<ScriptedOpenAI> {
  const s = await startScriptedOpenAI(opts);
  open.push(s);
  return s;
}

async function tavily(opts: Parameters<typeof startScriptedTavily>[0] = {}): Promise<ScriptedTavily> {
  const s = await startScriptedTavily(opts);
  open.push(s);
  return s;
}

function chatBody(agent: string | null, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const system = agent === null ? "You are a helpful assistant." : `You are careful.\nmedmmv-agent: ${agent}\nAnswer in JSON.`;
  return {
    model: "scripted-model",
    temperature: 0,
    messages: [
      { role: "system", content: system },
      { role: "user", content: "A 36-year-old man with knee pain." },
    ],
    ...extra,
  };
}

/** Attach a handler at once, so a rejection while awaiting something else is not "unhandled". */
function settle(p: Promise<unknown>): Promise<{ ok: boolean; error?: unknown }> {
  return p.then(
    () => ({ ok: true }),
    (error: unknown) => ({ ok: false, error }),
  );
}

async function post(baseUrl: string, body: unknown, init: RequestInit = {}): Promise<Response> {
  return fetch(`${baseUrl}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer x" },
    body: JSON.stringify(body),
    ...init,
  });
}

interface Completion {
  model: string;
  object: string;
  choices: Array<{
    finish_reason: string;
    message: { content: string | null; tool_calls?: Array<{ id: string; type: string; function: { name: string; arguments: string } }> };
  }>;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}

async function completion(res: Response): Promise<Completion> {
  expect(res.status).toBe(200);
  return (await res.json()) as Completion;
}

async function contentOf(res: Response): Promise<string | null> {
  return (await completion(res)).choices[0]?.message.content ?? null;
}

const JSON_SCHEMA_FORMAT = {
  response_format: { type: "json_schema", json_schema: { name: "extract", schema: { type: "object" } } },
};

describe("scripted OpenAI server: routing and scripts", () => {
  it("routes by the agent marker in string and array content, else to the fallback as 'unknown'", async () => {
    const seen: ScriptedRequest[] = [];
    const s = await openai({
      scenario: {
        agents: {
          rollout: { answer: "C" },
          "image-doctor": (req) => {
            seen.push(req);
            return { findings: req.images.length };
          },
        },
        fallback: (req) => ({ fellBackFor: req.agent }),
      },
    });

    expect(JSON.parse((await contentOf(await post(s.baseUrl, chatBody("rollout")))) ?? "")).toEqual({ answer: "C" });

    const arrayBody = {
      model: "vision-model",
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "Describe the radiograph.\nmedmmv-agent: image-doctor" },
            { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } },
            { type: "image_url", image_url: { url: "data:image/jpeg;base64,BBBB" } },
          ],
        },
      ],
    };
    expect(JSON.parse((await contentOf(await post(s.baseUrl, arrayBody))) ?? "")).toEqual({ findings: 2 });
    expect(seen[0]?.images).toEqual(["data:image/png;base64,AAAA", "data:image/jpeg;base64,BBBB"]);
    expect(seen[0]?.text).toContain("Describe the radiograph.");
    expect(seen[0]?.model).toBe("vision-model");

    expect(JSON.parse((await contentOf(await post(s.baseUrl, chatBody(null)))) ?? "")).toEqual({ fellBackFor: "unknown" });
    expect(s.stats().byAgent).toEqual({ rollout: 1, "image-doctor": 1, unknown: 1 });
  });

  it("prefers the marker of the system message over one quoted in a user message", async () => {
    const s = await openai({ scenario: { agents: { "auto-repair": "repair", rollout: "rollout" } } });
    const body = {
      model: "m",
      messages: [
        { role: "system", content: "medmmv-agent: auto-repair" },
        { role: "user", content: "Previous prompt was:\nmedmmv-agent: rollout" },
      ],
    };
    expect(await contentOf(await post(s.baseUrl, body))).toBe("repair");
  });

  it("cycles array scripts by per-agent call index and passes request details to functions", async () => {
    const requests: ScriptedRequest[] = [];
    const s = await openai({
      scenario: {
        agents: {
          rollout: [{ answer: "A" }, { answer: "B" }, (req: ScriptedRequest) => ({ answer: `fn-${req.callIndex}` })],
          "coherence-judge": (req) => {
            requests.push(req);
            return { score: req.callIndex / 10 };
          },
        },
      },
    });
    const answers: string[] = [];
    for (let i = 0; i < 4; i++) {
      const c = await contentOf(await post(s.baseUrl, chatBody("rollout", { temperature: 0.7 })));
      answers.push((JSON.parse(c ?? "") as { answer: string }).answer);
    }
    expect(answers).toEqual(["A", "B", "fn-2", "A"]);

    await post(s.baseUrl, chatBody("coherence-judge"));
    await post(s.baseUrl, chatBody("coherence-judge"));
    expect(requests.map((r) => [r.callIndex, r.globalIndex, r.temperature, r.model])).toEqual([
      [0, 4, 0, "scripted-model"],
      [1, 5, 0, "scripted-model"],
    ]);
    const log = s.stats().log;
    expect(log.map((e) => e.temperature)).toEqual([0.7, 0.7, 0.7, 0.7, 0, 0]);
    expect(log.every((e) => e.status === 200 && e.end !== null && e.end >= e.start)).toBe(true);

    s.reset();
    expect(s.stats()).toMatchObject({ total: 0, byAgent: {}, log: [] });
    expect(await contentOf(await post(s.baseUrl, chatBody("rollout")))).toBe(JSON.stringify({ answer: "A" }));
  });

  it("answers json_schema / json_object / no-tools requests in content, with usage", async () => {
    const value = { answer: "D", rationale: "fits" };
    const s = await openai({ scenario: { agents: { rollout: value, cot: "plain text answer" } } });

    for (const extra of [JSON_SCHEMA_FORMAT, { response_format: { type: "json_object" } }, {}]) {
      const body = chatBody("rollout", extra);
      const c = await completion(await post(s.baseUrl, body));
      expect(c.object).toBe("chat.completion");
      expect(c.model).toBe("scripted-model");
      expect(c.choices[0]?.finish_reason).toBe("stop");
      expect(c.choices[0]?.message.tool_calls).toBeUndefined();
      expect(c.choices[0]?.message.content).toBe(JSON.stringify(value));
      const promptChars = (body.messages as Array<{ content: string }>).map((m) => m.content).join("\n").length;
      expect(c.usage.prompt_tokens).toBe(Math.ceil(promptChars / 4));
      expect(c.usage.completion_tokens).toBe(Math.ceil(JSON.stringify(value).length / 4));
      expect(c.usage.total_tokens).toBe(c.usage.prompt_tokens + c.usage.completion_tokens);
    }
    expect(await contentOf(await post(s.baseUrl, chatBody("cot")))).toBe("plain text answer");
  });

  it("answers tool-calling requests with a call to the chosen (or first) tool", async () => {
    const value = { hallucinationDetected: false, claims: [] };
    const s = await openai({ scenario: { agents: { "hd-supervisor": value } } });
    const tools = [
      { type: "function", function: { name: "first_tool", parameters: { type: "object" } } },
      { type: "function", function: { name: "hd_report", parameters: { type: "object" } } },
    ];

    const named = await completion(
      await post(s.baseUrl, chatBody("hd-supervisor", { tools, tool_choice: { type: "function", function: { name: "hd_report" } } })),
    );
    expect(named.choices[0]?.finish_reason).toBe("tool_calls");
    expect(named.choices[0]?.message.content).toBeNull();
    expect(named.choices[0]?.message.tool_calls).toEqual([
      { id: expect.any(String), type: "function", function: { name: "hd_report", arguments: JSON.stringify(value) } },
    ]);

    const auto = await completion(await post(s.baseUrl, chatBody("hd-supervisor", { tools, tool_choice: "auto" })));
    expect(auto.choices[0]?.message.tool_calls?.[0]?.function.name).toBe("first_tool");

    // response_format wins over tools: the client asked for content.
    const both = await completion(await post(s.baseUrl, chatBody("hd-supervisor", { tools, ...JSON_SCHEMA_FORMAT })));
    expect(both.choices[0]?.message.content).toBe(JSON.stringify(value));
    expect(s.stats().log.map((e) => e.mode)).toEqual(["tool", "tool", "content"]);
  });

  it("sends raw replies byte for byte", async () => {
    const s = await openai({
      scenario: { agents: { rollout: rawReply("<html>bad gateway</html>", { status: 502, headers: { "content-type": "text/html" } }) } },
    });
    const res = await post(s.baseUrl, chatBody("rollout"));
    expect(res.status).toBe(502);
    expect(res.headers.get("content-type")).toBe("text/html");
    expect(await res.text()).toBe("<html>bad gateway</html>");
  });

  it("refuses streaming, unknown routes and agents without a script with OpenAI-style errors", async () => {
    const s = await openai({ scenario: { agents: { rollout: { ok: true } } } });

    const streamed = await post(s.baseUrl, chatBody("rollout", { stream: true }));
    expect(streamed.status).toBe(400);
    const err = (await streamed.json()) as { error: { message: string; type: string; code: string } };
    expect(err.error.message).toMatch(/streaming is not supported/);
    expect(err.error.type).toBe("invalid_request_error");

    const missing = await fetch(`${s.baseUrl}/embeddings`, { method: "POST", body: "{}" });
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { type: string } }).error.type).toBe("invalid_request_error");

    const noScript = await post(s.baseUrl, chatBody("rater"));
    expect(noScript.status).toBe(400);
    expect(((await noScript.json()) as { error: { code: string } }).error.code).toBe("no_script");

    const models = (await (await fetch(`${s.baseUrl}/models`)).json()) as { object: string; data: Array<{ id: string }> };
    expect(models.object).toBe("list");
    expect(models.data.map((m) => m.id)).toEqual(["scripted-model"]);
    expect(s.stats()).toMatchObject({ total: 1, rejected: 1 });
  });
});

describe("scripted OpenAI server: faults", () => {
  it("429 with Retry-After, then 500, reach the client with OpenAI-style bodies", async () => {
    const s = await openai({ scenario: { agents: { rollout: { answer: "A" } } } });
    s.addFault({ kind: "status", status: 429, retryAfterSec: 2, agent: "rollout", times: 1 });
    s.addFault({ kind: "status", status: 500, agent: "rollout", times: 1 });

    const limited = await post(s.baseUrl, chatBody("rollout"));
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toBe("2");
    expect(((await limited.json()) as { error: { code: string } }).error.code).toBe("rate_limit_exceeded");

    const broken = await post(s.baseUrl, chatBody("rollout"));
    expect(broken.status).toBe(500);
    expect(broken.headers.get("retry-after")).toBeNull();
    expect(((await broken.json()) as { error: { type: string } }).error.type).toBe("server_error");

    // Both faults are retired: the third call is answered normally.
    expect(await contentOf(await post(s.baseUrl, chatBody("rollout")))).toBe(JSON.stringify({ answer: "A" }));
    const st = s.stats();
    expect(st.faultsInjected.status).toBe(2);
    expect(st.log.map((e) => [e.status, e.fault])).toEqual([
      [429, "status"],
      [500, "status"],
      [200, null],
    ]);
  });

  it("hang: a client timeout closes the connection and is counted as a disconnect", async () => {
    const s = await openai({ scenario: { agents: { rollout: { answer: "A" } } } });
    s.addFault({ kind: "hang", agent: "rollout", times: 1 });
    const t0 = Date.now();
    await expect(post(s.baseUrl, chatBody("rollout"), { signal: AbortSignal.timeout(200) })).rejects.toThrow();
    expect(Date.now() - t0).toBeLessThan(2000);
    await expect.poll(() => s.stats().disconnects).toBe(1);
    const st = s.stats();
    expect(st.inFlight).toBe(0);
    expect(st.faultsInjected.hang).toBe(1);
    expect(st.log[0]).toMatchObject({ fault: "hang", status: 0, disconnected: true });
    // The next call is served: the hang was retired.
    expect(await contentOf(await post(s.baseUrl, chatBody("rollout")))).toBe(JSON.stringify({ answer: "A" }));
    expect(s.stats().disconnects).toBe(1);
  });

  it("hold: the call waits until the test lets it go, then is answered or dropped as the test says", async () => {
    // With a latency, the fault is picked before the call is held: a test waits for `held`.
    const s = await openai({ scenario: { agents: { rollout: { answer: "A" } } }, latencyMs: 50 });
    s.addFault({ kind: "hold", agent: "rollout", times: 2 });
    expect(s.releaseHeld()).toBe(0);
    const first = post(s.baseUrl, chatBody("rollout"));
    await expect.poll(() => s.stats().held).toBe(1);
    expect(s.stats()).toMatchObject({ inFlight: 1, faultsInjected: { hold: 1 } });
    expect(s.releaseHeld("answer")).toBe(1);
    expect(await contentOf(await first)).toBe(JSON.stringify({ answer: "A" }));

    const second = settle(post(s.baseUrl, chatBody("rollout")));
    await expect.poll(() => s.stats().held).toBe(1);
    expect(s.releaseHeld("drop")).toBe(1);
    expect(await second).toMatchObject({ ok: false });
    expect(s.stats()).toMatchObject({ held: 0, faultsInjected: { hold: 2 } });
    // Both holds are retired: the next call is answered at once.
    expect(await contentOf(await post(s.baseUrl, chatBody("rollout")))).toBe(JSON.stringify({ answer: "A" }));
    expect(s.stats().log.map((e) => [e.fault, e.status])).toEqual([
      ["hold", 200],
      ["hold", 0],
      [null, 200],
    ]);
  });

  it("reset drops the connection without a reply and is not a client disconnect", async () => {
    const s = await openai({ scenario: { agents: { rollout: { answer: "A" } } } });
    s.addFault({ kind: "reset", times: 1 });
    await expect(post(s.baseUrl, chatBody("rollout"))).rejects.toThrow(/fetch failed/);
    await expect.poll(() => s.stats().inFlight).toBe(0);
    expect(s.stats()).toMatchObject({ disconnects: 0, faultsInjected: { reset: 1 } });
  });

  it("malformed, truncated, wrong-shape and non-JSON tool arguments", async () => {
    const value = { answer: "B", steps: ["one", "two", "three"] };
    const s = await openai({ scenario: { agents: { rollout: value } } });
    s.addFault({ kind: "malformed-json", callIndex: 0, agent: "rollout" });
    s.addFault({ kind: "truncated-json", callIndex: 1, agent: "rollout" });
    s.addFault({ kind: "schema-violation", callIndex: 2, agent: "rollout" });
    s.addFault({ kind: "tool-args-not-json", callIndex: 3, agent: "rollout" });

    const malformed = await contentOf(await post(s.baseUrl, chatBody("rollout", JSON_SCHEMA_FORMAT)));
    expect(() => JSON.parse(malformed ?? "")).toThrow();

    const truncatedC = await completion(await post(s.baseUrl, chatBody("rollout", JSON_SCHEMA_FORMAT)));
    const truncated = truncatedC.choices[0]?.message.content ?? "";
    expect(JSON.stringify(value).startsWith(truncated)).toBe(true);
    expect(truncated.length).toBe(Math.floor(JSON.stringify(value).length / 2));
    expect(truncatedC.choices[0]?.finish_reason).toBe("length");

    expect(JSON.parse((await contentOf(await post(s.baseUrl, chatBody("rollout", JSON_SCHEMA_FORMAT)))) ?? "")).toEqual({
      unexpected: true,
    });

    const tools = [{ type: "function", function: { name: "extract", parameters: { type: "object" } } }];
    const badArgs = await completion(await post(s.baseUrl, chatBody("rollout", { tools })));
    const args = badArgs.choices[0]?.message.tool_calls?.[0]?.function.arguments ?? "{}";
    expect(() => JSON.parse(args)).toThrow();

    expect(await contentOf(await post(s.baseUrl, chatBody("rollout", JSON_SCHEMA_FORMAT)))).toBe(JSON.stringify(value));
  });

  it("latency faults and base latency delay the reply", async () => {
    const s = await openai({ scenario: { agents: { rollout: 1 } }, latencyMs: 50 });
    s.addFault({ kind: "latency", ms: 150, times: 1 });
    let t0 = performance.now();
    await contentOf(await post(s.baseUrl, chatBody("rollout")));
    expect(performance.now() - t0).toBeGreaterThanOrEqual(190);
    t0 = performance.now();
    await contentOf(await post(s.baseUrl, chatBody("rollout")));
    const plain = performance.now() - t0;
    expect(plain).toBeGreaterThanOrEqual(45);
    s.setLatency(0);
    // The fault applied once: counted, not timed (a busy machine can make a plain reply slow).
    expect(s.stats().faultsInjected.latency).toBe(1);
  });

  it("a latency runs from the request's arrival, and the reply is composed while the call waits it out", async () => {
    // Long enough that "composed before the reply was due" cannot be an accident of a fast
    // machine: the old order (wait, then script) composed every reply after start + L.
    const L = 1_000;
    const composedAt: number[] = [];
    const s = await openai({
      scenario: {
        agents: {
          rollout: () => {
            composedAt.push(nowMs());
            return { a: 1 };
          },
        },
      },
      latencyMs: L,
    });
    const t0 = performance.now();
    await Promise.all(Array.from({ length: 8 }, async () => contentOf(await post(s.baseUrl, chatBody("rollout")))));
    expect(performance.now() - t0).toBeGreaterThanOrEqual(L);
    const log = s.stats().log;
    expect(log).toHaveLength(8);
    expect(composedAt).toHaveLength(8);
    for (const call of log) {
      // Never early, though a timer counts from the event loop's clock, which can be behind.
      expect(call.end! - call.start).toBeGreaterThanOrEqual(L);
    }
    // Every reply was written before any was due.
    expect(Math.max(...composedAt)).toBeLessThan(Math.min(...log.map((c) => c.start)) + L);
  });

  it("probabilistic faults are reproducible for a seed and differ across seeds", async () => {
    const pattern = async (s: ScriptedOpenAI): Promise<number[]> => {
      const statuses: number[] = [];
      for (let i = 0; i < 24; i++) statuses.push((await post(s.baseUrl, chatBody("rollout"))).status);
      return statuses;
    };
    const scenario = { agents: { rollout: { ok: true } } };
    const a = await openai({ scenario, seed: 7 });
    const b = await openai({ scenario, seed: 7 });
    const c = await openai({ scenario, seed: 8 });
    for (const s of [a, b, c]) s.addFault({ kind: "status", status: 503, probability: 0.5 });
    const pa = await pattern(a);
    expect(await pattern(b)).toEqual(pa);
    expect(pa.filter((x) => x === 503).length).toBeGreaterThan(0);
    expect(pa.filter((x) => x === 200).length).toBeGreaterThan(0);
    expect(await pattern(c)).not.toEqual(pa);
    a.reset();
    expect(await pattern(a)).toEqual(pa);
  });

  it("the fault plan applies the first matching fault and honours times and callIndex", () => {
    const plan = new FaultPlan(1);
    plan.add({ kind: "hang", agent: "rollout", callIndex: 2 });
    plan.add({ kind: "reset", agent: "rollout", times: 1 });
    plan.add({ kind: "latency", ms: 5, textIncludes: "search me" });
    const ctx = (callIndex: number, text = "") => ({ agent: "rollout", callIndex, globalIndex: 10 + callIndex, text });
    expect(plan.pick(ctx(0))?.kind).toBe("reset");
    expect(plan.pick(ctx(1))).toBeUndefined();
    expect(plan.pick(ctx(2))?.kind).toBe("hang");
    expect(plan.pick(ctx(3, "please search me"))?.kind).toBe("latency");
    // Without an agent, callIndex is the server-wide index.
    plan.clear();
    plan.add({ kind: "reset", callIndex: 11 });
    expect(plan.pick(ctx(1))?.kind).toBe("reset");
    expect(() => plan.add({ kind: "status", status: 42 })).toThrow(/status/);
    expect(() => plan.add({ kind: "hang", probability: 2 })).toThrow(/probability/);
  });
});

describe("scripted OpenAI server: concurrency and shutdown", () => {
  it("peakInFlight shows overlapping calls", async () => {
    const s = await openai({ scenario: { agents: { rollout: { a: 1 }, "text-doctor": { facts: [] } } }, latencyMs: 150 });
    await Promise.all([
      post(s.baseUrl, chatBody("rollout")),
      post(s.baseUrl, chatBody("rollout")),
      post(s.baseUrl, chatBody("text-doctor")),
    ]);
    const st = s.stats();
    expect(st.peakInFlight).toBeGreaterThanOrEqual(3);
    expect(st.peakInFlightByAgent).toEqual({ rollout: 2, "text-doctor": 1 });
    expect(st.inFlight).toBe(0);
  });

  it("sequential calls never overlap", async () => {
    const s = await openai({ scenario: { agents: { rollout: 1 } }, latencyMs: 20 });
    for (let i = 0; i < 3; i++) await contentOf(await post(s.baseUrl, chatBody("rollout")));
    expect(s.stats().peakInFlight).toBe(1);
  });

  it("close() ends promptly while a call hangs and another waits on latency", async () => {
    const s = await startScriptedOpenAI({ scenario: { agents: { rollout: 1, cot: 2 } } });
    s.addFault({ kind: "hang", agent: "rollout" });
    s.addFault({ kind: "latency", agent: "cot", ms: 30_000 });
    const hung = settle(post(s.baseUrl, chatBody("rollout")));
    const slow = settle(post(s.baseUrl, chatBody("cot")));
    await expect.poll(() => s.stats().inFlight).toBe(2);
    const t0 = performance.now();
    await s.close();
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(await hung).toMatchObject({ ok: false });
    expect(await slow).toMatchObject({ ok: false });
    // Server-side shutdown is not a client disconnect.
    expect(s.stats()).toMatchObject({ disconnects: 0, inFlight: 0 });
  });
});

describe("scripted Tavily server", () => {
  async function search(baseUrl: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
    return fetch(`${baseUrl}/search`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
    });
  }

  interface SearchReply {
    query: string;
    answer: null;
    results: Array<{ title: string; url: string; content: string; score: number }>;
    response_time: number;
  }

  it("requires a key (body or Bearer) and a query", async () => {
    const t = await tavily({ apiKey: "tvly-test" });
    expect(t.baseUrl.endsWith("/")).toBe(false);
    expect((await search(t.baseUrl, { query: "gout" })).status).toBe(401);
    expect((await search(t.baseUrl, { query: "gout", api_key: "wrong" })).status).toBe(401);
    expect((await search(t.baseUrl, { api_key: "tvly-test", query: "  " })).status).toBe(400);
    expect((await search(t.baseUrl, { api_key: "tvly-test" })).status).toBe(400);
    expect((await search(t.baseUrl, { query: "gout" }, { authorization: "Bearer tvly-test" })).status).toBe(200);
    expect(t.stats()).toMatchObject({ total: 1, rejected: 4 });
  });

  it("returns deterministic fake literature for a query, capped by max_results", async () => {
    const t = await tavily();
    const q = "septic arthritis knee synovial fluid";
    const r1 = (await (await search(t.baseUrl, { api_key: "k", query: q, search_depth: "basic" })).json()) as SearchReply;
    const r2 = (await (await search(t.baseUrl, { api_key: "k", query: q })).json()) as SearchReply;
    expect(r1.query).toBe(q);
    expect(r1.answer).toBeNull();
    expect(typeof r1.response_time).toBe("number");
    expect(r1.results.length).toBeGreaterThanOrEqual(2);
    expect(r1.results.length).toBeLessThanOrEqual(3);
    expect(r1.results).toEqual(r2.results);
    expect(r1.results).toEqual(defaultTavilyResults(q));
    for (const r of r1.results) {
      expect(r.url.startsWith("https://literature.example/")).toBe(true);
      expect(r.content).toContain(q);
    }
    expect(new Set(r1.results.map((r) => r.url)).size).toBe(r1.results.length);
    expect(defaultTavilyResults("gout tophi")).not.toEqual(defaultTavilyResults(q));

    const one = (await (await search(t.baseUrl, { api_key: "k", query: q, max_results: 1 })).json()) as SearchReply;
    expect(one.results).toEqual(r1.results.slice(0, 1));
    expect(t.stats().log.map((e) => e.maxResults)).toEqual([5, 5, 1]);
  });

  it("uses the test's results function and applies faults", async () => {
    const t = await tavily({
      results: (req) => [{ title: `T${req.callIndex}`, url: "https://x.example/1", content: req.query, score: 0.5 }],
    });
    t.addFault({ kind: "status", status: 429, retryAfterSec: 1, times: 1 });
    t.addFault({ kind: "malformed-json", times: 1 });
    t.addFault({ kind: "hang", textIncludes: "hang me" });

    const limited = await search(t.baseUrl, { api_key: "k", query: "q" });
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toBe("1");
    const garbled = await search(t.baseUrl, { api_key: "k", query: "q" });
    expect(garbled.status).toBe(200);
    await expect(garbled.json()).rejects.toThrow();
    const ok = (await (await search(t.baseUrl, { api_key: "k", query: "q" })).json()) as SearchReply;
    expect(ok.results).toEqual([{ title: "T2", url: "https://x.example/1", content: "q", score: 0.5 }]);

    await expect(
      fetch(`${t.baseUrl}/search`, {
        method: "POST",
        body: JSON.stringify({ api_key: "k", query: "please hang me" }),
        signal: AbortSignal.timeout(150),
      }),
    ).rejects.toThrow();
    await expect.poll(() => t.stats().disconnects).toBe(1);
    expect(t.stats().faultsInjected).toMatchObject({ status: 1, "malformed-json": 1, hang: 1 });
  });

  it("holds a search until the test lets it go, as the model server does", async () => {
    const t = await tavily({ latencyMs: 20 });
    t.addFault({ kind: "hold", times: 1 });
    const held = search(t.baseUrl, { api_key: "k", query: "q" });
    await expect.poll(() => t.stats().held).toBe(1);
    expect(t.releaseHeld()).toBe(1);
    expect((await held).status).toBe(200);
    expect(t.stats()).toMatchObject({ held: 0, faultsInjected: { hold: 1 } });
  });

  it("counts overlapping searches and closes promptly with one hung", async () => {
    const t = await startScriptedTavily({ latencyMs: 100 });
    await Promise.all(["a", "b", "c"].map((q) => search(t.baseUrl, { api_key: "k", query: q })));
    expect(t.stats().peakInFlight).toBe(3);
    t.addFault({ kind: "hang" });
    const hung = settle(search(t.baseUrl, { api_key: "k", query: "d" }));
    await expect.poll(() => t.stats().inFlight).toBe(1);
    const t0 = performance.now();
    await t.close();
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(await hung).toMatchObject({ ok: false });
    expect(t.stats()).toMatchObject({ inFlight: 0, disconnects: 0 });
  });
});

describe("scripted OpenAI server speaks the wire format @langchain/openai sends", () => {
  const Diagnosis = z.object({
    answer: z.string().describe("option letter"),
    confidence: z.number().describe("0..1"),
  });

  async function withCapture(): Promise<{ s: ScriptedOpenAI; bodies: Array<Record<string, unknown>> }> {
    const bodies: Array<Record<string, unknown>> = [];
    const s = await openai({
      scenario: {
        agents: {
          rollout: (req) => {
            bodies.push(req.body);
            return { answer: "D", confidence: 0.8 };
          },
          cot: (req) => {
            bodies.push(req.body);
            return "The answer is D.";
          },
        },
      },
    });
    return { s, bodies };
  }

  const messages = [new SystemMessage("medmmv-agent: rollout\nAnswer as JSON."), new HumanMessage("Which option?")];

  it("plain invoke", async () => {
    const { s, bodies } = await withCapture();
    const model = new ChatOpenAI({ model: "scripted", apiKey: "x", configuration: { baseURL: s.baseUrl }, maxRetries: 0 });
    const out = await model.invoke([new SystemMessage("medmmv-agent: cot"), new HumanMessage("Think step by step.")]);
    expect(out.content).toBe("The answer is D.");
    expect(out.usage_metadata?.input_tokens).toBeGreaterThan(0);
    expect(bodies[0]).toMatchObject({ model: "scripted", stream: false });
    expect(bodies[0]?.tools).toBeUndefined();
    expect(bodies[0]?.response_format).toBeUndefined();
  });

  it("withStructuredOutput jsonSchema (includeRaw)", async () => {
    const { s, bodies } = await withCapture();
    const model = new ChatOpenAI({ model: "scripted", apiKey: "x", configuration: { baseURL: s.baseUrl }, maxRetries: 0 });
    const out = await model.withStructuredOutput(Diagnosis, { method: "jsonSchema", includeRaw: true }).invoke(messages);
    expect(out.parsed).toEqual({ answer: "D", confidence: 0.8 });
    expect(out.raw.content).toBe(JSON.stringify({ answer: "D", confidence: 0.8 }));
    const rf = bodies[0]?.response_format as { type: string; json_schema: { name: string; strict?: boolean; schema: { properties: object } } };
    expect(rf.type).toBe("json_schema");
    expect(rf.json_schema.name).toBe("extract");
    expect(Object.keys(rf.json_schema.schema.properties)).toEqual(["answer", "confidence"]);
    expect(bodies[0]?.tools).toBeUndefined();
  });

  it("withStructuredOutput functionCalling (includeRaw)", async () => {
    const { s, bodies } = await withCapture();
    const model = new ChatOpenAI({ model: "scripted", apiKey: "x", configuration: { baseURL: s.baseUrl }, maxRetries: 0 });
    const out = await model
      .withStructuredOutput(Diagnosis, { method: "functionCalling", name: "diagnosis", includeRaw: true })
      .invoke(messages);
    expect(out.parsed).toEqual({ answer: "D", confidence: 0.8 });
    const tools = bodies[0]?.tools as Array<{ type: string; function: { name: string; parameters: { properties: object } } }>;
    expect(tools).toHaveLength(1);
    expect(tools[0]?.type).toBe("function");
    expect(tools[0]?.function.name).toBe("diagnosis");
    expect(Object.keys(tools[0]?.function.parameters.properties ?? {})).toEqual(["answer", "confidence"]);
    expect(bodies[0]?.tool_choice).toEqual({ type: "function", function: { name: "diagnosis" } });
    expect(bodies[0]?.response_format).toBeUndefined();
    expect(s.stats().log[0]?.mode).toBe("tool");
  });

  it("a client-side timeout over the SDK closes the socket of a hung call", async () => {
    const { s } = await withCapture();
    s.addFault({ kind: "hang", times: 1 });
    const model = new ChatOpenAI({ model: "scripted", apiKey: "x", configuration: { baseURL: s.baseUrl }, maxRetries: 0 });
    await expect(model.invoke(messages, { signal: AbortSignal.timeout(200) })).rejects.toThrow();
    await expect.poll(() => s.stats().disconnects).toBe(1);
  });
});
