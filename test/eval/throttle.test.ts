import http from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { AimdGate, llmOrigin, watchResponses } from "../../src/eval/throttle.js";

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

/** GET over node:http (the transport the model client may use instead of fetch). */
function httpGet(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http.get(url, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    }).on("error", reject);
  });
}

describe("watchResponses", () => {
  it("sees the status of every response from the model origin, over fetch or node:http, and nothing else", async () => {
    const server = http.createServer((req, res) => {
      res.statusCode = req.url === "/v1/slow-down" ? 429 : 200;
      res.end("{}");
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as AddressInfo).port;
    const seen: number[] = [];
    const stop = watchResponses(llmOrigin(`http://127.0.0.1:${port}/v1`), (s) => seen.push(s));
    try {
      await (await fetch(`http://127.0.0.1:${port}/v1/slow-down`)).text();
      await (await fetch(`http://127.0.0.1:${port}/v1/ok`)).text();
      // Same server under another host name: another origin, not the model endpoint.
      const other = llmOrigin(`http://localhost:${port}/v1`);
      expect(other).not.toBe(llmOrigin(`http://127.0.0.1:${port}/v1`));
      await (await fetch(`http://localhost:${port}/v1/slow-down`)).text();
      expect(seen).toEqual([429, 200]);
      expect(await httpGet(`http://127.0.0.1:${port}/v1/slow-down`)).toBe(429);
      expect(await httpGet(`http://localhost:${port}/v1/slow-down`)).toBe(429);
      expect(seen).toEqual([429, 200, 429]);
      stop();
      await httpGet(`http://127.0.0.1:${port}/v1/slow-down`);
      expect(seen).toEqual([429, 200, 429]); // unsubscribed
    } finally {
      stop();
      server.close();
    }
  });

  it("llmOrigin defaults to OpenAI", () => {
    expect(llmOrigin(null)).toBe("https://api.openai.com");
  });
});
