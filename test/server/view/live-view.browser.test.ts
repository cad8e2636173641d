/**
 * The link a clinician clicks: the CDS Hooks card of a case that is still running, opened in
 * Chromium (playwright-core, Debian's /usr/bin/chromium). The page shows the case's events as
 * they happen and becomes the audit view when the case finishes, without a reload.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import type { LiveState, ViewState } from "../../../src/server/view/view-payload.js";
import { stemiPrefetch as prefetch } from "../cds-hooks/stemi-prefetch.js";
import { json, KEY_A, startTestServer, until, VIEW_ENV, type TestServer } from "../http/http-harness.js";
import { useChromium, watch } from "../../support/browser.js";
import { seriousAxeViolations } from "../../support/axe.js";

const browser = useChromium();
let t: TestServer;

beforeAll(async () => {
  // A held model call keeps the case running for exactly as long as the test looks at the page:
  // the test lets it go (releaseHeld) once it has seen the live progress, on any machine's pace.
  t = await startTestServer({ scenario: clinicalScenario({ rolloutAnswers: ["Inferior ST-elevation myocardial infarction"] }), env: { ...VIEW_ENV, MEDMMV_LLM_MAX_ATTEMPTS: "2" } });
});
afterAll(async () => {
  await t.close();
});

/** The card's link of a new case for `record`, once the case is held at a model call. */
async function runningCaseLink(record: Record<string, unknown>): Promise<string> {
  const hook = await fetch(`${t.base}/cds-services/medmmv-diagnosis`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${KEY_A}` },
    body: JSON.stringify({ hook: "patient-view", hookInstance: randomUUID(), context: { userId: "Practitioner/dr-1", patientId: "stemi-1" }, prefetch: record }),
  });
  expect(hook.status).toBe(200);
  const card = (await json<{ cards: Array<{ summary: string; links: Array<{ url: string }> }> }>(hook)).cards[0]!;
  expect(card.summary).toBe("medmmv started analysing this record");
  await until(() => (t.openai.stats().held > 0 ? true : undefined), 10_000, "the case is held at a model call");
  return card.links[0]!.url;
}

const live = (p: import("playwright-core").Page) => p.evaluate(() => (window as unknown as { __medmmvLive?: LiveState }).__medmmvLive ?? null);

describe("the CDS card's link while the case runs", () => {
  it("shows the progress live, then the finished audit view appears in the same page", async () => {
    t.openai.addFault({ kind: "hold", agent: "rollout", times: 1 });
    const link = await runningCaseLink(prefetch());

    const page = await browser().newPage();
    const { problems, requests } = watch(page);
    try {
      await page.goto(link);
      await page.waitForFunction(() => ((window as unknown as { __medmmvLive?: LiveState }).__medmmvLive?.events ?? 0) > 0, null, { timeout: 30_000 });
      const opened = (await live(page))!;
      expect(opened.status).toMatch(/^(queued|running)$/);
      expect(opened.finished).toBe(false);
      expect(await page.textContent("[data-testid=live-status]")).toBe(opened.status);
      expect(await page.$$eval("[data-testid=progress] li", (li) => li.length)).toBe(opened.events);
      // No audit view yet: the page is the progress, with the question, the stage reached and the steps in words.
      expect(await page.$("[data-testid=path-panel]")).toBeNull();
      expect(await page.textContent("[data-testid=live-question]")).toMatch(/^Question: /);
      expect(await page.getAttribute("[data-testid=stages] li[aria-current=step]", "data-stage")).toMatch(/^(queued|evidence|reasoning)$/);
      expect(await page.getAttribute("[data-testid=progress-log]", "aria-live")).toBe("polite");
      expect(await page.textContent("[data-testid=progress]")).not.toMatch(/rejectedQuotes|hallucinationDetected/);
      expect(await seriousAxeViolations(page)).toEqual([]);

      // The held call is let go and answers, the rest of the pipeline streams in, and the audit view replaces the progress.
      expect(t.openai.releaseHeld("answer")).toBe(1);
      await page.waitForFunction(() => (window as unknown as { __medmmvView?: ViewState }).__medmmvView?.ready === true, null, { timeout: 60_000 });
      const done = (await live(page))!;
      expect(done).toMatchObject({ finished: true, stopped: null, status: "completed" });
      expect(done.events).toBeGreaterThan(opened.events); // events that happened after the page opened
      expect(await page.textContent("[data-testid=answer]")).toMatch(/Inferior ST-elevation myocardial infarction/);
      expect(await page.$("[data-testid=path-panel]")).not.toBeNull();
      expect(await page.$("[data-testid=progress]")).toBeNull();
      // One navigation: the page was never reloaded; everything it fetched was its own origin.
      expect(requests.filter((u) => u.split("?")[0]!.endsWith("/view"))).toHaveLength(1);
      expect(requests.every((u) => u.startsWith(t.base))).toBe(true);
      expect(problems).toEqual([]);
    } finally {
      await page.close();
    }
  });

  it("a case that fails while the page is open: the page shows why", async () => {
    // The held call's connection is dropped once the page is open; its retry and every other rollout are refused: the pipeline reports the failure.
    t.openai.addFault({ kind: "hold", agent: "rollout", times: 1 });
    t.openai.addFault({ kind: "status", status: 400, agent: "rollout" });
    const record = { ...prefetch(), allergies: null }; // another record than the first test's (null: the EHR has none)
    const page = await browser().newPage();
    const { problems } = watch(page);
    try {
      await page.goto(await runningCaseLink(record));
      await page.waitForFunction(() => ((window as unknown as { __medmmvLive?: LiveState }).__medmmvLive?.events ?? 0) > 0, null, { timeout: 30_000 });
      expect((await live(page))!.status).toMatch(/^(queued|running)$/);
      expect(t.openai.releaseHeld("drop")).toBe(1);
      await page.waitForFunction(() => (window as unknown as { __medmmvView?: ViewState }).__medmmvView?.ready === true, null, { timeout: 60_000 });
      expect(await live(page)).toMatchObject({ finished: true, status: "failed" });
      expect(await page.textContent("body")).toMatch(/Error [A-Z_]+: /);
      expect(problems).toEqual([]);
    } finally {
      t.openai.clearFaults();
      await page.close();
    }
  });
});
