import { afterAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../../src/core/config.js";
import { DiagnosisResult } from "../../../src/core/contracts/diagnosis-result.js";
import { recordReliability, type ReliabilityRow } from "../../support/reliability-recorder.js";
import { chestPain, diagnosedCaseId, json, KEY_A, KEY_B, startTestServer, VIEW_ENV, type TestServer } from "./http-harness.js";

/**
 * The attacks of the hostile-input review, each against a real server on a loopback port:
 * every test reproduces one finding (it failed on the code before the fix) and records a
 * row of RELIABILITY.md's security table (attack, tries, outcome).
 */
const rows: ReliabilityRow[] = [];
const record = (scenario: string, trials: number, outcome: string): void => void rows.push({ suite: "security", scenario, trials, outcome, itemsLost: 0 });
afterAll(({}, suite) => recordReliability("security-attacks", rows, suite));

const CANARY = "OKAPI-CANARY-5D21C";
const CDS_PATH = "/cds-services/medmmv-diagnosis";

async function withServer<T>(env: Record<string, string>, body: (t: TestServer) => Promise<T>): Promise<T> {
  const t = await startTestServer({ env: { ...VIEW_ENV, ...env } });
  try {
    return await body(t);
  } finally {
    await t.close();
  }
}

describe("tenants do not share the response cache", () => {
  it("tenant B posting tenant A's exact case gets no cache hit (it cannot learn that A sent it); A's own repeat does", async () => {
    await withServer({ MEDMMV_CACHE: "deterministic" }, async (t) => {
      const post = async (key: string) => {
        const res = await t.api("/diagnose", { method: "POST", json: chestPain(), key });
        expect(res.status).toBe(201);
        return DiagnosisResult.parse(await res.json()).usage;
      };
      const first = await post(KEY_A);
      const probe = await post(KEY_B);
      const again = await post(KEY_A);
      expect(probe.cacheHits ?? 0).toBe(0);
      expect(probe.llmCalls).toBe(first.llmCalls);
      // The cache still works inside one tenant, so the probe's zero is the scoping, not a cold cache.
      expect(again.cacheHits ?? 0).toBeGreaterThan(0);
      record("cross-tenant cache probe: B posts A's exact case", 1, `B: ${probe.cacheHits ?? 0} cache hits, ${probe.llmCalls} model calls (A's first run: ${first.llmCalls}); A's repeat: ${again.cacheHits} hits`);
    });
  });
});

describe("nothing sensitive reaches the logs", () => {
  it("canaries in every query parameter and header of every route, a real view-link token and a real api_key never appear in the log", async () => {
    await withServer({ MEDMMV_LOG_LEVEL: "trace", MEDMMV_RATE_LIMIT_PER_MIN: "100000", MEDMMV_AUTH_FAILURES_PER_MIN: "100000" }, async (t) => {
      const caseId = await diagnosedCaseId(t);
      const link = await json<{ url: string }>(await t.api(`/cases/${caseId}/view-links`, { method: "POST", json: { ttlSec: 600 } }));
      const token = new URL(link.url, t.base).searchParams.get("token")!;
      expect((await t.api(link.url, { key: null })).status).toBe(200);
      const query = new URLSearchParams({ question: `${CANARY} John Smith MRN 12345`, option: CANARY, token: CANARY, api_key: KEY_A, k: CANARY, lastEventId: CANARY, scope: CANARY, format: CANARY, cursor: CANARY, limit: CANARY, status: CANARY }).toString();
      const headers = { "x-request-id": CANARY, "user-agent": CANARY, referer: `https://ehr.example/${CANARY}`, cookie: `s=${CANARY}`, "x-forwarded-for": "203.0.113.9", "last-event-id": CANARY, "idempotency-key": CANARY, prefer: CANARY, "x-canary": CANARY };
      const routes: Array<[string, string]> = [
        ["GET", "/healthz"],
        ["GET", "/readyz"],
        ["GET", "/cases"],
        ["GET", `/cases/${caseId}`],
        ["GET", `/cases/${CANARY}`],
        ["GET", `/cases/${caseId}/evidence-graph`],
        ["GET", `/cases/${caseId}/fhir`],
        ["GET", `/cases/${caseId}/turns`],
        ["POST", `/cases/${caseId}/turns`],
        ["POST", `/cases/${caseId}/view-links`],
        ["GET", `/cases/${caseId}/view`],
        ["GET", `/cases/${caseId}/events`],
        ["POST", "/diagnose"],
        ["GET", "/cds-services"],
        ["POST", CDS_PATH],
        ["GET", `/no-such-route/${CANARY}`],
        ["DELETE", `/cases/${CANARY}`],
      ];
      let tries = 0;
      for (const [method, route] of routes) {
        for (const key of [KEY_A, `${CANARY}-0123456789abcdefghijklmnopqrstuvwxyz`, null]) {
          const res = await t.api(`${route}?${query}`, { method, key, headers: { ...headers, ...(method === "POST" ? { "content-type": "application/json" } : {}) }, ...(method === "POST" ? { body: JSON.stringify({ question: CANARY }) } : {}) });
          await res.arrayBuffer();
          tries++;
        }
      }
      // The token through the view link itself (a success) and as the only query parameter.
      expect((await t.api(`/cases/${caseId}/view?token=${encodeURIComponent(token)}`, { key: null })).status).toBe(200);
      const logs = t.logs.text();
      expect(logs).toContain("incoming request"); // the capture works…
      expect(logs).toContain("question=[redacted]"); // …and keeps the parameter names
      for (const secret of [CANARY, token, KEY_A, "John Smith"]) expect(logs.toLowerCase(), `log holds ${secret.slice(0, 12)}…`).not.toContain(secret.toLowerCase());
      record("canaries in every query parameter and header of 17 routes (3 credentials each), a live view-link token, ?api_key=<valid key>", tries + 2, "no canary, token or key in the log; URLs logged with parameter names only");
    });
  });
});

describe("rate limits and failed authentication", () => {
  it("view-route brute force: wrong keys and bad tokens are counted first and get 429 past the address's budget", async () => {
    await withServer({ MEDMMV_AUTH_FAILURES_PER_MIN: "10", MEDMMV_RATE_LIMIT_PER_MIN: "1000" }, async (t) => {
      const statuses: number[] = [];
      for (let i = 0; i < 15; i++) statuses.push((await t.api("/cases/x/view", { key: `wrong-key-${i}-0123456789abcdefghijklmnop` })).status);
      for (let i = 0; i < 15; i++) statuses.push((await t.api(`/cases/x/view?token=forged.${i}`, { key: null })).status);
      expect(statuses.slice(0, 10)).toEqual(Array(10).fill(401));
      expect(statuses.slice(10)).toEqual(Array(20).fill(429));
      record("view-route brute force: 15 wrong keys + 15 forged tokens on /cases/x/view, 10 failures/min allowed", 30, `${statuses.filter((s) => s === 401).length} × 401 then ${statuses.filter((s) => s === 429).length} × 429`);
    });
  });

  it("failed attempts share one per-address budget over the API, view and CDS routes", async () => {
    await withServer({ MEDMMV_AUTH_FAILURES_PER_MIN: "6", MEDMMV_RATE_LIMIT_PER_MIN: "1000" }, async (t) => {
      const bad = "not-a-key-0123456789abcdefghijklmnopqr";
      const tries = [() => t.api("/cases", { key: bad }), () => t.api("/cases/x/view", { key: bad }), () => t.api(CDS_PATH, { method: "POST", key: bad, json: {} })];
      const statuses: number[] = [];
      for (let i = 0; i < 9; i++) statuses.push((await tries[i % 3]!()).status);
      expect(statuses).toEqual([401, 401, 401, 401, 401, 401, 429, 429, 429]);
      record("key guessing spread over API, view and CDS routes, 6 failures/min allowed", 9, `${statuses.join(", ")}`);
    });
  });

  it("one key has one budget over the API, view and CDS routes (not one per route family)", async () => {
    await withServer({ MEDMMV_RATE_LIMIT_PER_MIN: "7" }, async (t) => {
      const caseId = await diagnosedCaseId(t); // 1
      const statuses = [
        (await t.api("/cases")).status, // 2
        (await t.api(`/cases/${caseId}/view`)).status, // 3
        (await t.api(`/cases/${caseId}/view`)).status, // 4
        (await t.api(CDS_PATH, { method: "POST", json: {} })).status, // 5 (a 400, counted all the same)
        (await t.api(CDS_PATH, { method: "POST", json: {} })).status, // 6
        (await t.api(`/cases/${caseId}`)).status, // 7
        (await t.api(`/cases/${caseId}/view`)).status, // 8: over
        (await t.api(CDS_PATH, { method: "POST", json: {} })).status,
        (await t.api("/cases")).status,
      ];
      expect(statuses).toEqual([200, 200, 200, 400, 400, 200, 429, 429, 429]);
      expect((await t.api("/cases", { key: KEY_B })).status).toBe(200); // another key, its own budget
      record("one key over API, view and CDS routes at 7 requests/min", 10, `8th request and after: 429 on every route (${statuses.slice(6).join(", ")}); another key unaffected`);
    });
  });

  it("the view route answers a missing case, another key's case and a bad key with the same 401 (no key oracle)", async () => {
    await withServer({}, async (t) => {
      const caseId = await diagnosedCaseId(t);
      const probes = [
        t.api("/cases/00000000-0000-4000-8000-000000000000/view"),
        t.api(`/cases/${caseId}/view`, { key: KEY_B }),
        t.api(`/cases/${caseId}/view`, { key: "not-a-key-0123456789abcdefghijklmnopqr" }),
        t.api("/cases/00000000-0000-4000-8000-000000000000/view", { key: "not-a-key-0123456789abcdefghijklmnopqr" }),
      ];
      // A browser route: the refusal is an HTML page, the same page for every probe.
      const said = (html: string) => /data-testid="message-text">([^<]*)</.exec(html)?.[1] ?? html;
      const answers = await Promise.all(probes.map(async (p) => (await p).status + " " + said(await (await p).text())));
      expect(new Set(answers).size).toBe(1);
      expect(answers[0]).toMatch(/^401 /);
      record("view route as a key oracle: missing case / other key's case / bad key", 4, "one answer for all: 401 with the same page");
    });
  });
});

describe("view links are revoked with their key", () => {
  it("after a restart without tenant A's key, A's link is refused while B's link still opens", async () => {
    const t = await startTestServer({ env: VIEW_ENV });
    let linkA = "";
    let linkB = "";
    try {
      const caseA = await diagnosedCaseId(t);
      const caseB = await diagnosedCaseId({ api: (p, init) => t.api(p, { ...init, key: KEY_B }) });
      linkA = (await json<{ url: string }>(await t.api(`/cases/${caseA}/view-links`, { method: "POST", json: {} }))).url;
      linkB = (await json<{ url: string }>(await t.api(`/cases/${caseB}/view-links`, { method: "POST", json: {}, key: KEY_B }))).url;
      expect((await t.api(linkA, { key: null })).status).toBe(200);
      const token = new URL(linkA, t.base).searchParams.get("token")!;
      // The token names a key id, neither the key nor the owner digest alone.
      const claims = JSON.parse(Buffer.from(token.split(".")[0]!, "base64url").toString("utf8")) as Record<string, unknown>;
      expect(claims.k).toMatch(/^k-[0-9a-f]{16}$/);
      expect(JSON.stringify(claims)).not.toContain(KEY_A);
    } finally {
      await t.server.close();
    }
    const restarted = await startTestServer({ env: { ...VIEW_ENV, MEDMMV_API_KEYS: KEY_B }, dataDir: t.dataDir, openai: t.openai });
    try {
      const a = await restarted.api(linkA, { key: null });
      expect(a.status).toBe(401);
      expect((await restarted.api(linkB, { key: null })).status).toBe(200);
      record("a revoked key's view link (restart with only B's key)", 2, "A's link 401, B's link 200");
    } finally {
      await restarted.close();
      await t.close();
    }
  });
});

describe("secrets are checked at start", () => {
  it("a short view-link secret or a short API key refuses to start, with a message that names the variable and not the value", () => {
    const shortSecret = "sixteen-chars-ok";
    let err: unknown;
    try {
      loadConfig({ MEDMMV_VIEW_LINK_SECRET: shortSecret });
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ code: "CONFIG_INVALID" });
    expect(String((err as Error).message)).toMatch(/MEDMMV_VIEW_LINK_SECRET.*at least 32 characters/);
    expect(String((err as Error).message)).not.toContain(shortSecret);
    const shortKey = "short-key-123";
    let keyErr: unknown;
    try {
      loadConfig({ MEDMMV_API_KEYS: `${KEY_A},${shortKey}` });
    } catch (e) {
      keyErr = e;
    }
    expect(keyErr).toMatchObject({ code: "CONFIG_INVALID" });
    expect(String((keyErr as Error).message)).toMatch(/1 of the 2 keys in MEDMMV_API_KEYS is shorter than 32 characters/);
    expect(String((keyErr as Error).message)).not.toContain(shortKey);
    expect(() => loadConfig({ MEDMMV_TRUST_PROXY: "yes please" })).toThrow(/MEDMMV_TRUST_PROXY/);
    record("short MEDMMV_VIEW_LINK_SECRET (16 chars), a 13-char API key, a garbled MEDMMV_TRUST_PROXY", 3, "refused at start (CONFIG_INVALID) naming the variable, never the value");
  });
});

describe("URLs and request ids", () => {
  it("an id over 100 characters gets the JSON 414 error without the URL echoed; x-request-id only in a safe shape", async () => {
    await withServer({}, async (t) => {
      const long = `${CANARY}${"x".repeat(300)}`;
      const res = await t.api(`/cases/${long}`);
      expect(res.status).toBe(414);
      expect(res.headers.get("content-type")).toMatch(/^application\/json/);
      const body = await json<{ code: string; message: string; requestId: string }>(res);
      expect(body).toMatchObject({ code: "INVALID_INPUT" });
      expect(body.requestId).toMatch(/^[0-9a-f-]{36}$/);
      expect(JSON.stringify(body)).not.toContain(CANARY);
      const bad = await t.api("/cases/%E0%A4%A", { headers: { "x-request-id": `patient ${CANARY}` } });
      expect(bad.status).toBe(400);
      expect(bad.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
      expect(t.logs.text()).not.toContain(CANARY);
      record("a 400-character case id; a malformed percent-encoding with a text x-request-id", 2, "JSON 414 / 400 with our error body, no URL echoed, request id replaced");
    });
  });
});

describe("tenant-visible errors", () => {
  it("a provider failure tells the tenant what failed and what to do, without the model URL or the provider's text; the server log has the detail", async () => {
    const t = await startTestServer({ env: VIEW_ENV });
    try {
      const PROVIDER_TEXT = "upstream says: deployment gpu-17.internal.example overloaded";
      t.openai.addFault({ kind: "status", status: 400, body: JSON.stringify({ error: { message: PROVIDER_TEXT, type: "invalid_request_error" } }) });
      const res = await t.api("/diagnose", { method: "POST", json: chestPain() });
      const text = await res.text();
      for (const leak of [PROVIDER_TEXT, "gpu-17", t.openai.baseUrl, "127.0.0.1"]) expect(text, `tenant sees ${leak}`).not.toContain(leak);
      const result = DiagnosisResult.parse(JSON.parse(text));
      expect(result.status).toBe("failed");
      expect(JSON.stringify(result.error)).toMatch(/HTTP 400/);
      const events = await (await t.api(`/cases/${result.caseId}/events`)).text();
      for (const leak of [PROVIDER_TEXT, t.openai.baseUrl]) expect(events).not.toContain(leak);
      const logged = t.logs.lines().filter((l) => l.msg === "model call failed");
      expect(logged.length).toBeGreaterThan(0);
      expect(logged[0]).toMatchObject({ endpoint: `${t.openai.baseUrl}/chat/completions`, status: 400 });
      expect(String(logged[0]!.provider)).toContain("overloaded");
      record("provider 400 with internal host names in its error text", 1, "tenant sees 'HTTP 400' and what to do; URL and provider text only in the server log");
    } finally {
      await t.close();
    }
  });
});

describe("the settings reach the server", () => {
  it("request, headers, connection and keep-alive timeouts come from the configuration", async () => {
    const env = { MEDMMV_REQUEST_TIMEOUT_MS: "7000", MEDMMV_HEADERS_TIMEOUT_MS: "3000", MEDMMV_CONNECTION_TIMEOUT_MS: "90000", MEDMMV_KEEP_ALIVE_TIMEOUT_MS: "4000" };
    await withServer(env, async (t) => {
      const srv = t.server.app.server;
      expect([srv.requestTimeout, srv.headersTimeout, srv.timeout, srv.keepAliveTimeout]).toEqual([7000, 3000, 90000, 4000]);
    });
  });
});
