import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { loadConfig, type Config } from "../../../src/core/config.js";
import { TavilySearch, tavilyMessageStatus, tavilyRefusal } from "../../../src/core/search/tavily.js";
import { startScriptedTavily, type ScriptedTavily } from "../../../src/scripted/scripted-tavily-server.js";
import { until } from "../../support/until.js";

/** The Tavily provider through @tavily/core, against the scripted Tavily server over real HTTP. */
let server: ScriptedTavily;
beforeAll(async () => {
  server = await startScriptedTavily({ apiKey: "tvly-test" });
});
afterAll(async () => {
  await server.close();
});
beforeEach(() => {
  server.clearFaults();
  server.setLatency(0);
  server.reset();
});

const searchConfig = (env: Record<string, string> = {}): Config["search"] =>
  loadConfig({ TAVILY_API_KEY: "tvly-test", TAVILY_BASE_URL: server.baseUrl, MEDMMV_SEARCH_TIMEOUT_MS: "5000", ...env }).search;

describe("TavilySearch (@tavily/core)", () => {
  it("sends the query with our key and base URL and returns the results, capped", async () => {
    const found = await new TavilySearch(searchConfig()).search("  inferior STEMI right coronary artery  ", { maxResults: 2 });
    expect(found.query).toBe("inferior STEMI right coronary artery");
    expect(found.results).toHaveLength(2);
    expect(found.results[0]!.url).toMatch(/^https:\/\/literature\.example\//);
    expect(Date.parse(found.retrievedAt)).not.toBeNaN();
    expect(server.stats().log.map((l) => [l.query, l.maxResults, l.status])).toEqual([["inferior STEMI right coronary artery", 2, 200]]);
  });

  it("drops results whose URL is not http(s)", async () => {
    const srv = await startScriptedTavily({
      results: () => [
        { title: "ok", url: "https://a.example/x", content: "fine", score: 0.9 },
        { title: "bad", url: "javascript:alert(1)", content: "no", score: 0.8 },
      ],
    });
    try {
      const found = await new TavilySearch({ ...searchConfig(), baseUrl: srv.baseUrl }).search("troponin", { maxResults: 3 });
      expect(found.results.map((r) => r.url)).toEqual(["https://a.example/x"]);
    } finally {
      await srv.close();
    }
  });

  it("retries a 503 through our retry layer (3 attempts at the server), then SEARCH_FAILED", async () => {
    server.addFault({ kind: "status", status: 503 });
    await expect(new TavilySearch(searchConfig()).search("troponin", {})).rejects.toMatchObject({ code: "SEARCH_FAILED", retryable: true });
    expect(server.stats().log.map((l) => l.status)).toEqual([503, 503, 503]);
  });

  it("recovers when a transient fault clears", async () => {
    server.addFault({ kind: "status", status: 500, times: 1 });
    const found = await new TavilySearch(searchConfig()).search("troponin", {});
    expect(found.results.length).toBeGreaterThan(0);
    expect(server.stats().log.map((l) => l.status)).toEqual([500, 200]);
  });

  it("does not repeat a request the provider refused (wrong key): one attempt, SEARCH_FAILED, not retryable", async () => {
    await expect(new TavilySearch(searchConfig({ TAVILY_API_KEY: "wrong" })).search("troponin", {})).rejects.toMatchObject({ code: "SEARCH_FAILED", retryable: false, details: { status: 401 } });
    expect(server.stats().rejected).toBe(1);
  });

  it("a malformed reply is retried, then SEARCH_FAILED", async () => {
    server.addFault({ kind: "malformed-json" });
    await expect(new TavilySearch(searchConfig()).search("troponin", {})).rejects.toMatchObject({ code: "SEARCH_FAILED" });
    expect(server.stats().total).toBe(3);
  });

  it("a hung server: each attempt times out and its connection is closed at the server", async () => {
    server.addFault({ kind: "hang" });
    const err = await new TavilySearch(searchConfig({ MEDMMV_SEARCH_TIMEOUT_MS: "300" })).search("troponin", {}).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "SEARCH_FAILED" });
    expect(String((err as Error).message)).toMatch(/timed out/);
    await until(() => (server.stats().inFlight === 0 ? true : undefined), 10_000, "hung requests closed");
    const log = server.stats().log;
    expect(log).toHaveLength(3);
    expect(log.every((l) => l.disconnected)).toBe(true);
  });

  it("an aborted case stops waiting at once with ABORTED", async () => {
    server.addFault({ kind: "hang" });
    const ctrl = new AbortController();
    const pending = new TavilySearch(searchConfig()).search("troponin", { signal: ctrl.signal });
    await until(() => (server.stats().inFlight === 1 ? true : undefined), 10_000, "request at the server");
    ctrl.abort();
    await expect(pending).rejects.toMatchObject({ code: "ABORTED" });
    expect(server.stats().total).toBe(1);
    await until(() => (server.stats().inFlight === 0 ? true : undefined), 10_000, "connection closed at the server");
  });

  it("an aborted case closes its connection at the server, long before the attempt would time out", async () => {
    server.addFault({ kind: "hang" });
    const ctrl = new AbortController();
    const pending = new TavilySearch(searchConfig({ MEDMMV_SEARCH_TIMEOUT_MS: "600000" })).search("troponin", { signal: ctrl.signal });
    await until(() => (server.stats().log.length === 1 && server.stats().inFlight === 1 ? true : undefined), 10_000, "request at the server");
    ctrl.abort();
    await expect(pending).rejects.toMatchObject({ code: "ABORTED" });
    // The attempt's timeout is ten minutes: only the abort can have closed the connection.
    await until(() => (server.stats().inFlight === 0 ? true : undefined), 10_000, "connection closed at the server");
    expect(server.stats().log.map((l) => l.disconnected)).toEqual([true]);
  });

  it("a 429 whose Retry-After is beyond the budget fails at once (retryable), without asking again", async () => {
    server.addFault({ kind: "status", status: 429, retryAfterSec: 3600 });
    const err = await new TavilySearch(searchConfig()).search("troponin", {}).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "SEARCH_FAILED", retryable: true, details: { retryAfterMs: 3_600_000 } });
    expect(server.stats().log.map((l) => l.status)).toEqual([429]);
  });

  it("a 429 with a short Retry-After is waited out, then the search succeeds", async () => {
    server.addFault({ kind: "status", status: 429, retryAfterSec: 1, times: 1 });
    const started = Date.now();
    const found = await new TavilySearch(searchConfig()).search("troponin", {});
    expect(found.results.length).toBeGreaterThan(0);
    expect(server.stats().log.map((l) => l.status)).toEqual([429, 200]);
    // Retry-After is a floor: the jittered backoff alone (≤ 300 ms) would have come back sooner.
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
  });

  it("reads a status, or else a refusal, from the client library's error messages", () => {
    expect(tavilyMessageStatus(new Error('400 Error: {"detail":"x"}'))).toBe(400);
    expect(tavilyMessageStatus(new Error('429 Error: {"detail":"x"}'))).toBe(429);
    expect(tavilyMessageStatus(new Error("Unauthorized: missing or invalid API key."))).toBeNull();
    expect(tavilyRefusal(new Error("Unauthorized: missing or invalid API key."))).toBe(true);
    expect(tavilyRefusal(new Error("Scripted fault: HTTP 503."))).toBe(false);
    expect(tavilyRefusal(new Error("Request timed out after 5 seconds."))).toBe(false);
  });

  it("MEDMMV_SEARCH=tavily without a key is a configuration error that says what to set", () => {
    expect(() => loadConfig({ MEDMMV_SEARCH: "tavily" })).toThrow(expect.objectContaining({ code: "CONFIG_MISSING", message: expect.stringMatching(/TAVILY_API_KEY/) }));
  });
});
