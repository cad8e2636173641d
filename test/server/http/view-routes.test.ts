// Keeps a real port: Chromium loads the served page over HTTP.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openReady, useChromium, watch } from "../../support/browser.js";
import { diagnosedCaseId, VIEW_ENV, startTestServer, type TestServer } from "./http-harness.js";

/** The audit view as the API serves it: key or signed link, ownership, CSP that lets exactly the page run. */
let t: TestServer;
let caseId: string;
const browser = useChromium();

beforeAll(async () => {
  t = await startTestServer({ env: VIEW_ENV });
  caseId = await diagnosedCaseId(t);
});
afterAll(async () => {
  await t.close();
});

describe("GET /cases/{id}/view", () => {
  it("the served page runs in Chromium under its CSP and draws the case's evidence graph", async () => {
    const made = await t.api(`/cases/${caseId}/view-links`, { method: "POST", json: {} });
    const { url } = (await made.json()) as { url: string };
    const page = await browser().newPage();
    // Chromium reports a CSP violation as a console error, so it lands in problems.
    const { problems } = watch(page);
    await openReady(page, t.base + url);
    const state = await page.evaluate(() => (window as unknown as { __medmmvView: { nodeCount: number; edgeCount: number } }).__medmmvView);
    const full = (await (await t.api(`/cases/${caseId}/evidence-graph?scope=full`)).json()) as { nodes: unknown[]; edges: unknown[] };
    expect(state.nodeCount).toBe(full.nodes.length);
    expect(state.edgeCount).toBe(full.edges.length);
    expect(problems).toEqual([]);
    await page.close();
  });
});
