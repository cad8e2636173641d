import { METHODS } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { recordReliability, type ReliabilityRow } from "../../support/reliability-recorder.js";
import { KEY_A, startTestServer, type TestServer } from "./http-harness.js";

/**
 * GET /metrics as an attacker sees it: its token is guessed through the same request gate
 * (and the same per-address budget of failed attempts) as every other credential, and
 * requests without any credential cannot mint metric series (label values come from closed
 * lists). Each test reproduces a finding of the adversarial review and records its row of
 * RELIABILITY.md's security table.
 */
const rows: ReliabilityRow[] = [];
const record = (scenario: string, trials: number, outcome: string): void => void rows.push({ suite: "security", scenario, trials, outcome, itemsLost: 0 });
afterAll(({}, suite) => recordReliability("security-metrics", rows, suite));

const TOKEN = "metrics-token-0123456789abcdef";
const FAILURES_PER_MIN = 10;
let t: TestServer;

beforeAll(async () => {
  t = await startTestServer({ env: { MEDMMV_METRICS_TOKEN: TOKEN, MEDMMV_AUTH_FAILURES_PER_MIN: String(FAILURES_PER_MIN), MEDMMV_RATE_LIMIT_PER_MIN: "100000" } });
});
afterAll(async () => {
  await t?.close();
});

/** Through the server's own request path (onRequest hooks, router, onResponse) without a socket per try; `ip` is the client address. */
const inject = (method: string, url: string, ip: string, authorization?: string) =>
  t.server.app.inject({ method: method as "GET", url, remoteAddress: ip, headers: authorization ? { authorization } : {} });

/** The label sets of one metric's samples (one per series). */
function seriesOf(text: string, metric: string): string[] {
  return text
    .split("\n")
    .filter((l) => l.startsWith(`${metric}{`))
    .map((l) => /\{(.*)\}/.exec(l)![1]!);
}

/** Every sample line of the HTTP metrics (the counter, and the latency histogram's buckets, sums and counts). */
const httpSamples = (text: string): number => text.split("\n").filter((l) => l.startsWith("medmmv_http_")).length;

describe("GET /metrics goes through the request gate", () => {
  it("wrong metrics tokens are counted against the address's failure budget: 429 once it is spent, and a wrong API key right after is 429 too", async () => {
    const ip = "203.0.113.21";
    const statuses: number[] = [];
    for (let i = 0; i < 30; i++) statuses.push((await inject("GET", "/metrics", ip, `Bearer wrong-metrics-token-${i}-0123456789`)).statusCode);
    expect(statuses.slice(0, FAILURES_PER_MIN)).toEqual(Array(FAILURES_PER_MIN).fill(401));
    expect(statuses.slice(FAILURES_PER_MIN)).toEqual(Array(30 - FAILURES_PER_MIN).fill(429));
    const wrongKey = await inject("GET", "/cases", ip, "Bearer not-a-key-0123456789abcdefghijklmnopqr");
    expect(wrongKey.statusCode).toBe(429);
    // The right token still scrapes (a valid credential is never refused for others' failures), and an API key is not a metrics token.
    expect((await inject("GET", "/metrics", ip, `Bearer ${TOKEN}`)).statusCode).toBe(200);
    expect((await inject("GET", "/metrics", "203.0.113.22", `Bearer ${KEY_A}`)).statusCode).toBe(401);
    record(
      `metrics-token guessing: 30 wrong tokens on /metrics, then a wrong API key on /cases, ${FAILURES_PER_MIN} failures/min allowed`,
      31,
      `${statuses.filter((s) => s === 401).length} × 401 then ${statuses.filter((s) => s === 429).length} × 429; the wrong API key after: ${wrongKey.statusCode}; the right token: 200`,
    );
  });
});

describe("every authenticated route is behind the gate", () => {
  it("from an address past its failure budget, every route but the public ones answers 429 to a request without a credential", async () => {
    const ip = "203.0.113.77";
    for (let i = 0; i < FAILURES_PER_MIN; i++) await inject("GET", "/metrics", ip, `Bearer spent-budget-${i}-0123456789abcdef`);
    const PUBLIC = new Set(["GET /healthz", "GET /readyz", "GET /cds-services"]);
    const doc = t.server.app.swagger() as { paths: Record<string, Record<string, unknown>> };
    const routes = [["GET", "/metrics"], ...Object.entries(doc.paths).flatMap(([p, ops]) => Object.keys(ops).map((m) => [m.toUpperCase(), p.replace(/\{[^}]+\}/g, "x-1")]))] as Array<[string, string]>;
    const checked = routes.filter(([m, p]) => !PUBLIC.has(`${m} ${p}`));
    expect(checked.length).toBeGreaterThan(10);
    const notGated: string[] = [];
    for (const [m, p] of checked) {
      const res = await inject(m, p, ip);
      if (res.statusCode !== 429) notGated.push(`${m} ${p}: ${res.statusCode}`);
    }
    expect(notGated).toEqual([]);
    record(`every documented route and /metrics without a credential, from an address past its failure budget`, checked.length, `${checked.length} of ${checked.length} routes: 429 (public: /healthz, /readyz, CDS discovery)`);
  });
});

describe("metric label values come from closed lists", () => {
  it(`${METHODS.length} methods × 6 paths without a credential add a bounded number of series, none with a method or path the client chose`, async () => {
    const scrape = async () => {
      const res = await inject("GET", "/metrics", "198.51.100.1", `Bearer ${TOKEN}`);
      expect(res.statusCode).toBe(200);
      return res.body;
    };
    const first = await scrape();
    const before = seriesOf(first, "medmmv_http_requests_total");
    const methods = METHODS;
    const paths = ["/cases", "/cases/x-1", "/diagnose", "/healthz", "/no-such/route", "/cases/x-1/view"];
    let tries = 0;
    for (const method of methods)
      for (const p of paths) {
        // Each from its own address, so the failure budget does not cut the run short.
        await inject(method, p, `192.0.2.${(tries % 250) + 1}`);
        tries++;
      }
    const last = await scrape();
    const after = seriesOf(last, "medmmv_http_requests_total");
    const added = after.length - before.length;
    // Eight method labels over the few templates these paths match, and one label for the rest,
    // however many methods or paths a client tries (before the closed lists: +45, one per method).
    expect(added, `series before ${before.length}, after ${after.length}`).toBeLessThanOrEqual(24);
    const labels = after.map((s) => Object.fromEntries([...s.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]])));
    const methodValues = new Set(labels.map((l) => l.method));
    const routeValues = new Set(labels.map((l) => l.route));
    for (const m of methodValues) expect(["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "other"]).toContain(m);
    for (const r of routeValues) expect(r === "unmatched" || r!.startsWith("/"), `route label ${r}`).toBe(true);
    expect(routeValues).not.toContain("/no-such/route");
    record(
      `unauthenticated requests: ${methods.length} HTTP methods × ${paths.length} paths`,
      tries,
      `request series ${before.length} → ${after.length} (+${added}), HTTP sample lines ${httpSamples(first)} → ${httpSamples(last)}; method labels: ${[...methodValues].sort().join(", ")}; unmatched paths one label`,
    );
  });
});
