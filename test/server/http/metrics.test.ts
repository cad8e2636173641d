import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chestPain, startTestServer, until, type TestServer } from "./http-harness.js";

/**
 * GET /metrics: Prometheus text behind its own token, with the figures an operator needs
 * during a run, and no case id, key or case text in any label.
 */
const TOKEN = "metrics-token-0123456789abcdef";
const CANARY = "Zebulon-Quartermaine-canary";
let s: TestServer;

beforeAll(async () => {
  s = await startTestServer({ env: { MEDMMV_METRICS_TOKEN: TOKEN } });
});
afterAll(async () => {
  await s?.close();
});

const scrape = async (token: string | null): Promise<Response> => fetch(`${s.base}/metrics`, { headers: token ? { authorization: `Bearer ${token}` } : {} });

/** Every label value of every sample line. */
function labelValues(text: string): string[] {
  return text
    .split("\n")
    .filter((l) => l && !l.startsWith("#"))
    .flatMap((l) => [...(/\{(.*)\}/.exec(l)?.[1] ?? "").matchAll(/\w+="((?:[^"\\]|\\.)*)"/g)].map((m) => m[1]!));
}

describe("GET /metrics", () => {
  it("refuses a missing or wrong token, and an API key", async () => {
    expect((await scrape(null)).status).toBe(401);
    expect((await scrape("wrong-token-wrong-token")).status).toBe(401);
    const withKey = await s.api("/metrics");
    expect(withKey.status).toBe(401);
  });

  it("shows requests, cases, queue, model calls and tokens after a run, and no case id, key or text in any label", async () => {
    const res = await s.api("/diagnose", { method: "POST", json: chestPain({ notes: `${chestPain().notes} Patient name ${CANARY}.`, question: `What is the diagnosis for ${CANARY}?` }), headers: { prefer: "respond-async" } });
    expect(res.status).toBe(202);
    const { caseId } = (await res.json()) as { caseId: string };
    await until(async () => {
      const c = await s.server.store.getCase(caseId);
      return c && ["completed", "abstained", "failed"].includes(c.status) ? true : undefined;
    }, 30_000, "the case to finish");
    await s.api(`/cases/${caseId}`);
    await s.api(`/cases/${caseId}-missing?x=${CANARY}`);
    const m = await scrape(TOKEN);
    expect(m.status).toBe(200);
    expect(m.headers.get("content-type")).toMatch(/text\/plain/);
    const text = await m.text();
    for (const name of [
      "medmmv_http_requests_total",
      "medmmv_http_request_duration_seconds_bucket",
      "medmmv_cases{",
      "medmmv_case_queue_seconds_bucket",
      "medmmv_queue_jobs{",
      "medmmv_model_calls_total",
      "medmmv_model_call_seconds_bucket",
      "medmmv_model_tokens_total",
      "medmmv_search_calls_total",
      "medmmv_case_repairs_bucket",
      "medmmv_case_abstentions_total",
      "medmmv_cases_finished_total",
    ])
      expect(text, name).toContain(name);
    expect(text).toMatch(/medmmv_http_requests_total\{method="GET",route="\/cases\/:id",status="200"\} [1-9]/);
    expect(text).toMatch(/medmmv_http_requests_total\{method="GET",route="\/cases\/:id",status="404"\} [1-9]/);
    expect(text).toMatch(/medmmv_model_calls_total\{agent="rollout",role="executor",model="[^"]+",outcome="ok"\} [1-9]/);
    expect(text).toMatch(/medmmv_model_tokens_total\{kind="prompt",/);
    const values = labelValues(text);
    expect(values.length).toBeGreaterThan(20);
    for (const v of values) {
      expect(v).not.toContain(caseId);
      expect(v).not.toContain(CANARY);
      expect(v).not.toMatch(/case-[0-9a-f]{8}-/);
      expect(v).not.toMatch(/chest|pain|substernal|troponin/i);
    }
    expect(text).not.toContain(CANARY);
    expect(text).not.toContain(caseId);
  });
});
