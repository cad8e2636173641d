// Uses app.inject: the audit page's HTML, CSP headers, key and signed-link checks need no socket (Chromium's run stays in view-routes.test.ts).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { diagnosedCaseId, VIEW_ENV, KEY_B } from "./http-harness.js";
import { startInjectServer, type InjectServer } from "./inject-harness.js";

/** The audit view as the API serves it: key or signed link, ownership, CSP that lets exactly the page run. */
let t: InjectServer;
let caseId: string;

beforeAll(async () => {
  t = await startInjectServer({ env: VIEW_ENV });
  caseId = await diagnosedCaseId(t);
});
afterAll(async () => {
  await t.close();
});

describe("GET /cases/{id}/view", () => {
  it("serves the page to the owner's key with a CSP that pins the inline script", async () => {
    const res = await t.api(`/cases/${caseId}/view`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/text\/html/);
    const csp = res.headers.get("content-security-policy")!;
    expect(csp).toMatch(/script-src[^;]*'nonce-/);
    expect(csp).not.toMatch(/https?:/);
    expect(res.headers.get("cache-control")).toBe("no-store");
    const html = await res.text();
    expect(html).toContain(caseId);
  });

  it("refuses a missing key, another key's case and a missing case with the same 401 (no key oracle)", async () => {
    const answers = await Promise.all(
      [
        t.api(`/cases/${caseId}/view`, { key: null }),
        t.api(`/cases/${caseId}/view`, { key: "not-a-key-0123456789abcdefghijklmnop" }),
        t.api(`/cases/${caseId}/view`, { key: KEY_B }),
        t.api("/cases/00000000-0000-4000-8000-000000000000/view"),
      ].map(async (r) => {
        const res = await r;
        // The page's refusal is HTML (a browser opened it), the same page whatever the reason.
        return { status: res.status, message: /data-testid="message-text">([^<]*)</.exec(await res.text())?.[1] };
      }),
    );
    expect(answers.map((a) => a.status)).toEqual([401, 401, 401, 401]);
    expect(new Set(answers.map((a) => a.message)).size).toBe(1);
  });

  it("signed links open the page without a key, only for their case, and not when tampered", async () => {
    const made = await t.api(`/cases/${caseId}/view-links`, { method: "POST", json: { ttlSec: 60 } });
    expect(made.status).toBe(201);
    const { url, expiresAt } = (await made.json()) as { url: string; expiresAt: string };
    expect(Date.parse(expiresAt)).toBeGreaterThan(Date.now());
    expect((await t.api(url, { key: null })).status).toBe(200);
    const token = new URL(url, t.base).searchParams.get("token")!;
    const tampered = token.slice(0, -2) + (token.endsWith("AA") ? "BB" : "AA");
    const bad = await t.api(`/cases/${caseId}/view?token=${encodeURIComponent(tampered)}`, { key: null });
    expect(bad.status).toBe(401);
    // A browser opened it: the refusal is a page that says so, not JSON.
    expect(bad.headers.get("content-type")).toMatch(/text\/html/);
    expect(await bad.text()).toMatch(/link to the audit view was not accepted/);
    expect((await t.api(`/cases/other-case/view?token=${encodeURIComponent(token)}`, { key: null })).status).toBe(401);
    expect((await t.api(`/cases/${caseId}/view-links`, { method: "POST", json: {}, key: KEY_B })).status).toBe(404);
  });
});
