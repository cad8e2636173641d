import { describe, expect, it } from "vitest";
import { AimdGate } from "../../src/eval/throttle.js";

describe("AimdGate", () => {
  it("admits up to the limit and queues the rest in order", async () => {
    const gate = new AimdGate(2);
    await gate.acquire();
    await gate.acquire();
    const order: number[] = [];
    const third = gate.acquire().then(() => order.push(3));
    const fourth = gate.acquire().then(() => order.push(4));
    await Promise.resolve();
    expect(order).toEqual([]);
    gate.release();
    await third;
    expect(order).toEqual([3]);
    gate.release();
    await fourth;
    expect(order).toEqual([3, 4]);
    expect(gate.active).toBe(2);
  });

  it("halves on rate limiting at most once per cooldown and climbs back by 1/limit per success", () => {
    let now = 0;
    const gate = new AimdGate(8, { cooldownMs: 1000, now: () => now });
    gate.onRateLimited();
    expect(gate.current).toBe(4);
    gate.onRateLimited(); // same burst: ignored for the cut, still counted
    expect(gate.current).toBe(4);
    now = 1500;
    gate.onRateLimited();
    expect(gate.current).toBe(2);
    now = 3000;
    gate.onRateLimited();
    now = 4500;
    gate.onRateLimited();
    expect(gate.current).toBe(1); // never below 1
    expect(gate.stats()).toMatchObject({ maxConcurrency: 8, minConcurrency: 1, rateLimited: 5, decreases: 3 });
    // From limit 1, +1/limit per success: 1 → 2 → 2.5 → 2.9 → 3.245 (floored for admission).
    gate.onSuccess();
    expect(gate.current).toBe(2);
    gate.onSuccess();
    gate.onSuccess();
    expect(gate.current).toBe(2);
    gate.onSuccess();
    expect(gate.current).toBe(3);
    for (let i = 0; i < 100; i++) gate.onSuccess();
    expect(gate.current).toBe(8); // capped at --concurrency
  });

  it("a lower limit holds new items back until enough finish", async () => {
    const gate = new AimdGate(4, { cooldownMs: 0 });
    for (let i = 0; i < 4; i++) await gate.acquire();
    gate.onRateLimited(); // limit 2 with 4 in flight
    let admitted = false;
    const next = gate.acquire().then(() => (admitted = true));
    gate.release();
    gate.release();
    await Promise.resolve();
    expect(admitted).toBe(false); // 2 in flight = the limit
    gate.release();
    await next;
    expect(admitted).toBe(true);
  });

  it("a waiting acquire rejects when the run is cancelled", async () => {
    const gate = new AimdGate(1);
    await gate.acquire();
    const ctrl = new AbortController();
    const waiting = gate.acquire(ctrl.signal);
    ctrl.abort();
    await expect(waiting).rejects.toMatchObject({ code: "ABORTED" });
  });
});

describe("rate-limit signal", () => {
  it("every 429 a model client retries reaches the limiter's listeners", async () => {
    const { startScriptedOpenAI } = await import("../../src/scripted/scripted-openai-server.js");
    const { scriptedConfig } = await import("../../src/scripted/scripted-config.js");
    const { LlmClient } = await import("../../src/core/llm/model-client.js");
    const { FairLimiter } = await import("../../src/core/llm/limiter.js");
    const { CallChain, UsageMeter } = await import("../../src/core/llm/usage.js");
    const { z } = await import("zod");
    const server = await startScriptedOpenAI({ scenario: { agents: { probe: { ok: true } } } });
    try {
      server.addFault({ kind: "status", status: 429, retryAfterSec: 0, times: 2 });
      const cfg = scriptedConfig(server.baseUrl);
      const limiter = new FairLimiter(4);
      let heard = 0;
      const stop = limiter.onRateLimited(() => heard++);
      const meter = new UsageMeter();
      const client = new LlmClient(cfg.llm, limiter);
      const out = await client.structured(
        { role: "judge", agent: "probe", schema: z.object({ ok: z.boolean() }), schemaName: "probe", temperature: 0, messages: [{ role: "user", content: "medmmv-agent: probe" }] },
        { caseKey: "c", meter, chain: new CallChain(meter) },
      );
      expect(out).toEqual({ ok: true });
      expect(heard).toBe(2);
      stop();
      server.addFault({ kind: "status", status: 429, retryAfterSec: 0, times: 1 });
      await client.structured(
        { role: "judge", agent: "probe", schema: z.object({ ok: z.boolean() }), schemaName: "probe", temperature: 0, messages: [{ role: "user", content: "medmmv-agent: probe again" }] },
        { caseKey: "c", meter, chain: new CallChain(meter) },
      );
      expect(heard).toBe(2); // unsubscribed
    } finally {
      await server.close();
    }
  });
});
