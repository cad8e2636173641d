// Keeps a real port: these start whole servers (startServer refusing a non-loopback HOST, its start-up log line) and throttle key guesses by client address.
import { describe, expect, it } from "vitest";
import { startServer } from "../../../src/server/server.js";
import { scriptedConfig } from "../../../src/scripted/scripted-config.js";
import { chestPain, json, KEY_B, startTestServer } from "./http-harness.js";
import { expectError } from "./expect-error.js";

describe("without API keys", () => {
  it("serves loopback clients without a key, and refuses to listen elsewhere", async () => {
    const open = await startTestServer({ env: { MEDMMV_API_KEYS: "" } });
    try {
      const res = await open.api("/diagnose", { key: null, method: "POST", json: chestPain() });
      expect(res.status).toBe(201);
      expect((await json<{ items: unknown[] }>(await open.api("/cases", { key: null }))).items).toHaveLength(1);
    } finally {
      await open.close();
    }
    const config = scriptedConfig("http://127.0.0.1:9/v1", { HOST: "0.0.0.0", PORT: "0", MEDMMV_DATA_DIR: "./never-created" });
    await expect(startServer(config, { handleSignals: false })).rejects.toThrow(/refusing to serve on HOST=0\.0\.0\.0 without API keys: set MEDMMV_API_KEYS/);
  });
});

describe("rate limit (429)", () => {
  it("limits each key separately and says when to retry", async () => {
    const limited = await startTestServer({ env: { MEDMMV_RATE_LIMIT_PER_MIN: "3", MEDMMV_AUTH_FAILURES_PER_MIN: "3" } });
    try {
      for (let i = 0; i < 3; i++) expect((await limited.api("/cases")).status).toBe(200);
      const res = await limited.api("/cases");
      const body = await expectError(res, 429, "RATE_LIMITED", /rate limit exceeded: at most 3 requests per minute per API key, over every route; retry in/);
      expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(body.details).toMatchObject({ limit: 3 });
      expect((await limited.api("/cases", { key: KEY_B })).status).toBe(200); // another key has its own budget
      expect((await limited.api("/healthz", { key: null })).status).toBe(200); // probes are not limited
      // Guessing keys is throttled too (by client address).
      for (let i = 0; i < 3; i++) expect((await limited.api("/cases", { key: `guess-${i}` })).status).toBe(401);
      expect((await limited.api("/cases", { key: "guess-4" })).status).toBe(429);
    } finally {
      await limited.close();
    }
  });
});

describe("server errors (5xx) hide internals", () => {
  it("no model endpoint: 503 MODEL_NOT_CONFIGURED naming the variables to set (not their values), logged once at start; readyz says why", async () => {
    const bare = await startTestServer({ env: { MEDMMV_MODEL: "", MEDMMV_JUDGE_MODEL: "" } });
    try {
      const body = await expectError(await bare.api("/diagnose", { method: "POST", json: chestPain() }), 503, "MODEL_NOT_CONFIGURED", /no model endpoint configured: set MEDMMV_MODEL\b/);
      expect(body.message).toMatch(/AZURE_OPENAI_API_KEY/);
      expect(body.message).not.toMatch(/try again later/);
      // Names, never values: the configured endpoint URL and key stay out of the answer.
      expect(JSON.stringify(body)).not.toContain(bare.openai.baseUrl);
      expect(JSON.stringify(body)).not.toContain("test-key");
      const warnings = bare.logs.lines().filter((l) => l.level === 40 && /no model endpoint configured/.test(String(l.msg)));
      expect(warnings).toHaveLength(1);
      expect(String(warnings[0]!.msg)).toMatch(/set MEDMMV_MODEL/);
      await expectError(await bare.api("/diagnose", { method: "POST", json: chestPain() }), 503, "MODEL_NOT_CONFIGURED");
      expect(bare.logs.lines().filter((l) => l.level === 40 && /no model endpoint configured/.test(String(l.msg)))).toHaveLength(1);
      const ready = await bare.api("/readyz", { key: null });
      expect(ready.status).toBe(503);
      expect(await ready.json()).toEqual({ status: "not-ready", checks: { store: "ok", model: "not-configured", accepting: true } });
      expect((await json<{ items: unknown[] }>(await bare.api("/cases"))).items).toEqual([]); // nothing was accepted

      // A broken store: 503 without the driver's words; the operator's log has the code.
      await bare.server.store.close();
      const broken = await expectError(await bare.api("/cases"), 503, "STORE_FAILED", /^the service is temporarily unavailable; try again later$/);
      expect(JSON.stringify(broken)).not.toMatch(/closed|sqlite|initialised/i);
      expect(Object.keys(broken).sort()).toEqual(["code", "message", "requestId", "statusCode"]);
      const logged = bare.logs.lines().find((l) => l.msg === "request failed" && l.reqId === broken.requestId);
      expect(logged).toMatchObject({ code: "STORE_FAILED", statusCode: 503 });
      expect((await bare.api("/readyz", { key: null })).status).toBe(503);
    } finally {
      await bare.close().catch(() => undefined);
    }
  });
});
