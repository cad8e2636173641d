import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { startScriptedOpenAI, type ScriptedOpenAI } from "../../src/scripted/scripted-openai-server.js";
import { scriptedConfig } from "../../src/scripted/scripted-config.js";
import { until } from "../support/until.js";
import { recordReliability, type ReliabilityRow } from "../support/reliability-recorder.js";
import { LlmClient } from "../../src/core/llm/model-client.js";
import { FairLimiter } from "../../src/core/llm/limiter.js";
import { CallChain, UsageMeter } from "../../src/core/llm/usage.js";
import { rejection } from "../support/rejection.js";

/** Faults of the model provider, at the one retry layer every agent call goes through. */
const Answer = z.object({ answer: z.string() });
let server: ScriptedOpenAI;
const rows: ReliabilityRow[] = [];

beforeAll(async () => {
  server = await startScriptedOpenAI({ scenario: { agents: { probe: { answer: "ok" } } } });
});
afterAll(async ({}, suite) => {
  await server.close();
  recordReliability("llm-faults", rows, suite);
});
beforeEach(() => {
  server.clearFaults();
  server.reset();
});

function client(env: Record<string, string> = {}) {
  const cfg = scriptedConfig(server.baseUrl, env);
  return new LlmClient(cfg.llm, new FairLimiter(cfg.llm.maxConcurrency));
}
function ctx(signal?: AbortSignal) {
  const meter = new UsageMeter();
  return { caseKey: "c1", meter, chain: new CallChain(meter), signal };
}
const call = (c: LlmClient, signal?: AbortSignal) =>
  c.structured({ role: "judge", agent: "probe", schema: Answer, schemaName: "probe", temperature: 0, messages: [{ role: "user", content: "medmmv-agent: probe\nanswer" }] }, ctx(signal));

const failure = rejection;

describe("model provider faults", () => {
  it("429 with Retry-After: N → the next attempt waits at least N s", async () => {
    server.addFault({ kind: "status", status: 429, retryAfterSec: 1, times: 2 });
    await expect(call(client())).resolves.toEqual({ answer: "ok" });
    // Counted at the server: one request per attempt of ours, each after the wait asked for
    // (no retry of LangChain's or the SDK's hiding under ours).
    const [a, b, c] = server.stats().log;
    expect(server.stats().total).toBe(3);
    expect(b!.start - a!.end!).toBeGreaterThanOrEqual(1000);
    expect(c!.start - b!.end!).toBeGreaterThanOrEqual(1000);
    rows.push({ suite: "llm", scenario: "429 with Retry-After: 1, twice", trials: 1, outcome: `3 requests; attempts after ${b!.start - a!.end!} and ${c!.start - b!.end!} ms (≥ 1000)`, itemsLost: 0 });
  });

  it("persistent 429s: attempts across all layers equal the configured count", async () => {
    server.addFault({ kind: "status", status: 429, retryAfterSec: 0 });
    const err = await failure(call(client({ MEDMMV_LLM_MAX_ATTEMPTS: "4" })));
    expect(err.code).toBe("LLM_RETRYABLE");
    expect(err.retryable).toBe(true);
    expect(server.stats().total).toBe(4); // no hidden SDK or LangChain retries
    rows.push({ suite: "llm", scenario: "persistent 429, 4 attempts configured", trials: 1, outcome: `${server.stats().total} requests, then LLM_RETRYABLE`, itemsLost: 0 });
  });

  it("a Retry-After beyond the budget fails the call at once as retryable", async () => {
    server.addFault({ kind: "status", status: 429, retryAfterSec: 3600 });
    const started = Date.now();
    const err = await failure(call(client({ MEDMMV_LLM_MAX_RETRY_AFTER_MS: "5000" })));
    expect(Date.now() - started).toBeLessThan(1000);
    expect(err.code).toBe("LLM_RETRYABLE");
    expect(err.retryable).toBe(true);
    expect(server.stats().total).toBe(1);
    rows.push({ suite: "llm", scenario: "Retry-After 3600 s, budget 5 s", trials: 1, outcome: "failed at once, retryable, 1 request", itemsLost: 0 });
  });

  it("500s are retried with backoff, then a typed retryable failure", async () => {
    server.addFault({ kind: "status", status: 500, times: 2 });
    await expect(call(client())).resolves.toEqual({ answer: "ok" });
    expect(server.stats().total).toBe(3);
    server.reset();
    server.addFault({ kind: "status", status: 503 });
    const err = await failure(call(client({ MEDMMV_LLM_MAX_ATTEMPTS: "3" })));
    expect(err.code).toBe("LLM_RETRYABLE");
    expect(server.stats().total).toBe(3);
    rows.push({ suite: "llm", scenario: "500 ×2 then OK; 503 always", trials: 2, outcome: "recovered on attempt 3; typed LLM_RETRYABLE after 3", itemsLost: 0 });
  });

  it("a 400 is not retried", async () => {
    server.addFault({ kind: "status", status: 400 });
    const err = await failure(call(client()));
    expect(err.code).toBe("LLM_FATAL");
    expect(server.stats().total).toBe(1);
  });

  it("connection resets are retried", async () => {
    server.addFault({ kind: "reset", times: 2 });
    await expect(call(client())).resolves.toEqual({ answer: "ok" });
    expect(server.stats().total).toBe(3);
    rows.push({ suite: "llm", scenario: "connection reset ×2", trials: 1, outcome: "recovered on attempt 3", itemsLost: 0 });
  });

  it("a hanging backend: the timeout fires, not early, and the backend sees the connection closed", async () => {
    server.addFault({ kind: "hang" });
    const timeoutMs = 2000;
    const started = Date.now();
    const err = await failure(call(client({ MEDMMV_LLM_TIMEOUT_MS: String(timeoutMs), MEDMMV_LLM_MAX_ATTEMPTS: "1" })));
    const took = Date.now() - started;
    expect(err.code).toBe("LLM_TIMEOUT");
    await until(() => (server.stats().disconnects >= 1 ? true : undefined), 5_000, "the backend to see the connection closed");
    expect(server.stats().disconnects).toBe(1);
    // Seen from the backend: from the request's arrival to the client closing the connection.
    const hung = server.stats().log[0]!;
    const held = hung.end! - hung.start;
    expect(hung.disconnected).toBe(true);
    // Not early; the upper bound only tells the timeout from a hang (a busy machine adds delay, never removes it).
    expect(held).toBeGreaterThanOrEqual(timeoutMs * 0.9);
    expect(held).toBeLessThan(timeoutMs * 3);
    rows.push({ suite: "llm", scenario: `hang, timeout ${timeoutMs} ms`, trials: 1, outcome: `LLM_TIMEOUT; backend saw the connection closed after ${held} ms (caller waited ${took} ms)`, itemsLost: 0 });
  });

  it.each([
    ["malformed-json", "jsonSchema"],
    ["schema-violation", "jsonSchema"],
    ["tool-args-not-json", "functionCalling"],
    ["schema-violation", "functionCalling"],
    ["malformed-json", "jsonMode"],
  ] as const)("%s (%s): two re-asks, then LLM_BAD_OUTPUT", async (kind, method) => {
    server.addFault({ kind });
    const err = await failure(call(client({ MEDMMV_STRUCTURED_OUTPUT: method })));
    expect(err.code).toBe("LLM_BAD_OUTPUT");
    expect(err.retryable).toBe(false);
    expect(server.stats().total).toBe(3);
    server.reset();
    server.clearFaults();
    server.addFault({ kind, times: 1 });
    await expect(call(client({ MEDMMV_STRUCTURED_OUTPUT: method }))).resolves.toEqual({ answer: "ok" });
    expect(server.stats().total).toBe(2);
    rows.push({ suite: "llm", scenario: `${kind} (${method})`, trials: 2, outcome: "always: 3 asks then LLM_BAD_OUTPUT; once: recovered by one re-ask", itemsLost: 0 });
  });

  it("truncated-json (finish_reason length): one re-ask with a larger output budget, then OUTPUT_TRUNCATED", async () => {
    server.addFault({ kind: "truncated-json" });
    const err = await failure(call(client({})));
    expect(err.code).toBe("OUTPUT_TRUNCATED");
    expect(err.retryable).toBe(false);
    const log = server.stats().log;
    expect(log).toHaveLength(2);
    server.reset();
    server.clearFaults();
    server.addFault({ kind: "truncated-json", times: 1 });
    await expect(call(client({}))).resolves.toEqual({ answer: "ok" });
    expect(server.stats().total).toBe(2);
    rows.push({ suite: "llm", scenario: "truncated-json (jsonSchema)", trials: 2, outcome: "always: re-asked once with a larger budget, then OUTPUT_TRUNCATED; once: recovered by that re-ask", itemsLost: 0 });
  });

  it("an abort while waiting out a backoff ends the call at once", async () => {
    server.addFault({ kind: "status", status: 429, retryAfterSec: 30 });
    const ctrl = new AbortController();
    setTimeout(() => ctrl.abort(), 200);
    const started = Date.now();
    const err = await failure(call(client({ MEDMMV_LLM_MAX_RETRY_AFTER_MS: "60000" }), ctrl.signal));
    expect(err.code).toBe("ABORTED");
    expect(Date.now() - started).toBeLessThan(1500);
  });

  it("an abort mid-call closes the connection", async () => {
    server.setLatency(5000);
    const ctrl = new AbortController();
    setTimeout(() => ctrl.abort(), 200);
    const err = await failure(call(client(), ctrl.signal));
    expect(err.code).toBe("ABORTED");
    await until(() => (server.stats().disconnects >= 1 ? true : undefined), 5_000, "the backend to see the connection closed");
    expect(server.stats().disconnects).toBe(1);
    expect(server.stats().total).toBe(1);
    server.setLatency(0);
    rows.push({ suite: "llm", scenario: "abort during a slow call", trials: 1, outcome: "ABORTED; backend saw the disconnect", itemsLost: 0 });
  });
});
