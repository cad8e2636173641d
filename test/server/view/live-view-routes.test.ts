// Uses a real port: the live page's event stream is Server-Sent Events (a hijacked reply), read here as a browser's EventSource would.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chestPain, json, readSse, startTestServer, until, VIEW_ENV, type TestServer } from "../http/http-harness.js";
import type { ViewLive } from "../../../src/server/view/view-payload.js";

/** The audit page of a case that has not finished, of one that failed, and the page's errors: HTML a browser can show. */
let t: TestServer;

beforeAll(async () => {
  // A held model call keeps a case running until the test lets it go (releaseHeld), then answers.
  t = await startTestServer({ env: VIEW_ENV });
});
afterAll(async () => {
  await t.close();
});

async function signedLink(caseId: string): Promise<string> {
  const res = await t.api(`/cases/${caseId}/view-links`, { method: "POST", json: {} });
  expect(res.status).toBe(201);
  return (await json<{ url: string }>(res)).url;
}

/** The live page's embedded data (inert JSON, as the page's script reads it). */
function liveData(html: string): ViewLive {
  const m = /<script id="medmmv-live" type="application\/json">([^<]*)<\/script>/.exec(html);
  expect(m, "the page carries live data").not.toBeNull();
  return JSON.parse(m![1]!) as ViewLive;
}

describe("the audit page of a case that has not finished", () => {
  it("is a live page (not a 409): it names where to follow the case and where the finished view will be, under the link's own token", async () => {
    t.openai.addFault({ kind: "hold", agent: "rollout", textIncludes: "LIVE-PAGE-MARKER", times: 1 });
    const accepted = await t.api("/diagnose", { method: "POST", json: chestPain({ notes: `${chestPain().notes} LIVE-PAGE-MARKER` }), headers: { prefer: "respond-async" } });
    expect(accepted.status).toBe(202);
    const caseId = (await json<{ caseId: string }>(accepted)).caseId;
    await until(() => (t.openai.stats().held > 0 ? true : undefined), 10_000, "the held call is in flight");
    const link = await signedLink(caseId);

    const page = await fetch(`${t.base}${link}`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/text\/html/);
    const csp = page.headers.get("content-security-policy")!;
    expect(csp).toMatch(/script-src[^;]*'nonce-/);
    expect(csp).toContain("connect-src 'self'");
    expect(csp).not.toMatch(/https?:|\*/);
    const live = liveData(await page.text());
    expect(live).toMatchObject({ version: 1, caseId, status: expect.stringMatching(/^(queued|running)$/) });
    const token = new URL(link, t.base).searchParams.get("token")!;
    expect(new URL(live.eventsUrl, t.base).searchParams.get("token")).toBe(token);

    // The payload is not there yet: a JSON 409 for the page's script.
    const early = await fetch(`${t.base}${live.payloadUrl}`);
    expect(early.status).toBe(409);
    expect(early.headers.get("content-type")).toMatch(/application\/json/);

    // The stream, authenticated by the link alone (EventSource sends no Authorization header), runs to the final event.
    const stream = await fetch(`${t.base}${live.eventsUrl}`, { headers: { accept: "text/event-stream" } });
    expect(stream.status).toBe(200);
    // Let the held call answer only now, so the stream sees the case run to its end.
    expect(t.openai.releaseHeld("answer")).toBe(1);
    const { events } = await readSse(stream, { timeoutMs: 60_000 });
    expect(events.map((e) => e.event)).toContain("rollout");
    expect(events.at(-1)).toMatchObject({ event: "final", data: { data: { status: "completed" } } });

    const done = await fetch(`${t.base}${live.payloadUrl}`);
    expect(done.status).toBe(200);
    expect(await json<{ version: number; result: { caseId: string } }>(done)).toMatchObject({ version: 1, result: { caseId } });
    // Once finished, the same link is the audit view itself.
    const finished = await fetch(`${t.base}${link}`);
    expect(await finished.text()).toContain('id="medmmv-data"');
    expect(finished.headers.get("content-security-policy")).toContain("connect-src 'none'");
  });

  it("the stream and payload refuse a link for another case", async () => {
    const other = (await json<{ caseId: string }>(await t.api("/diagnose", { method: "POST", json: chestPain() }))).caseId;
    const link = await signedLink(other);
    const token = new URL(link, t.base).searchParams.get("token")!;
    const stream = await fetch(`${t.base}/cases/case-00000000-0000-0000-0000-000000000000/view/events?token=${encodeURIComponent(token)}`);
    expect(stream.status).toBe(401);
    await stream.body?.cancel();
  });
});

describe("the audit page says what happened, as HTML", () => {
  it("a failed case: its page says why it failed", async () => {
    t.openai.addFault({ kind: "status", status: 400, agent: "rollout", textIncludes: "FAILED-PAGE-MARKER" });
    const res = await t.api("/diagnose", { method: "POST", json: chestPain({ notes: `${chestPain().notes} FAILED-PAGE-MARKER` }) });
    t.openai.clearFaults();
    const failed = await json<{ caseId: string; status: string }>(res);
    expect(failed.status).toBe("failed");
    const page = await fetch(`${t.base}${await signedLink(failed.caseId)}`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/text\/html/);
    const html = await page.text();
    // The pipeline's own failure result: the audit view, whose header shows the error (sections.ts renderHeader).
    const data = /<script id="medmmv-data" type="application\/json">([^<]*)<\/script>/.exec(html);
    expect(data).not.toBeNull();
    expect(JSON.parse(data![1]!)).toMatchObject({ result: { caseId: failed.caseId, status: "failed", error: { code: expect.any(String), message: expect.any(String) } } });
  });

  it.each([
    // In the words of whoever clicked a link, whatever the reason: a browser never sends a key.
    ["an invalid link", (id: string) => `/cases/${id}/view?token=not-a-token`, null, 401, /link to the audit view was not accepted/],
    ["no credentials", (id: string) => `/cases/${id}/view`, null, 401, /link to the audit view was not accepted/],
    // The same 401 as a bad key: the page must not tell a guesser which case ids exist.
    ["a case that does not exist", () => "/cases/case-00000000-0000-0000-0000-000000000000/view", undefined, 401, /link to the audit view was not accepted/],
  ] as const)("%s: %s as an HTML page saying so, not JSON", async (_name, url, key, status, why) => {
    const id = (await json<{ caseId: string }>(await t.api("/diagnose", { method: "POST", json: chestPain() }))).caseId;
    const res = await t.api(url(id), { key, headers: { accept: "text/html" } });
    expect(res.status).toBe(status);
    expect(res.headers.get("content-type")).toMatch(/text\/html/);
    expect(res.headers.get("content-security-policy")).toContain("script-src 'none'");
    const html = await res.text();
    expect(html).toMatch(why);
    expect(html).not.toContain('"statusCode"');
  });

  it("text from the request is escaped on the error page", async () => {
    const res = await t.api("/cases/%3Cscript%3Ealert(1)%3C%2Fscript%3E/view", {});
    expect(res.headers.get("content-type")).toMatch(/text\/html/);
    expect(await res.text()).not.toContain("<script>alert(1)");
  });
});
