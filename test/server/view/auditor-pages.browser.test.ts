/**
 * An auditor in Chromium, with nothing but the link POST /audit-links made: finds a
 * clinician's case by its date through the search form, reads its trail as a table, opens the
 * team's trail for the day and downloads it as CSV; every page passes axe-core (no serious or
 * critical violation) and fits 820 px without scrolling sideways.
 */
import { createHash } from "node:crypto";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chestPain, json, startTestServer, VIEW_ENV, type TestServer } from "../http/http-harness.js";
import { useChromium, watch } from "../../support/browser.js";
import { scrollsSideways, seriousAxeViolations } from "../../support/axe.js";

const DR_A = "clinic-key-doctor-a-0123456789abcdef";
const AUDITOR = "clinic-key-auditor-0123456789abcdef";
const sha = (k: string) => createHash("sha256").update(k).digest("hex");

const browser = useChromium();
let t: TestServer;
let dir: string;
let page: Page;
let problems: string[];
let caseId: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "medmmv-auditor-browser-"));
  await writeFile(
    join(dir, "keys.json"),
    JSON.stringify([
      { id: "dr-a", sha256: sha(DR_A), tenant: "clinic", roles: ["clinician"] },
      { id: "qa-1", sha256: sha(AUDITOR), tenant: "clinic", roles: ["auditor"] },
    ]),
  );
  t = await startTestServer({ env: { ...VIEW_ENV, MEDMMV_API_KEYS: "", MEDMMV_API_KEYS_FILE: join(dir, "keys.json") } });
  const created = await t.api("/diagnose", { method: "POST", json: chestPain(), key: DR_A });
  expect(created.status).toBe(201);
  caseId = (await json<{ caseId: string }>(created)).caseId;
  const context = await browser().newContext({ viewport: { width: 820, height: 1180 }, acceptDownloads: true });
  page = await context.newPage();
  problems = watch(page).problems;
}, 120_000);
afterAll(async () => {
  await page?.context().close();
  await t?.close();
  await rm(dir, { recursive: true, force: true });
});

async function checkPage(): Promise<void> {
  expect(await scrollsSideways(page)).toBeNull();
  expect(await seriousAxeViolations(page)).toEqual([]);
}

describe("the auditor pages in Chromium", () => {
  it("finds the case by date, reads its trail, and downloads the day's trail as CSV", async () => {
    const link = await t.api("/audit-links", { method: "POST", json: {}, key: AUDITOR });
    expect(link.status).toBe(201);
    await page.goto(`${t.base}${(await json<{ url: string }>(link)).url}`);
    expect(await page.locator("h1").textContent()).toBe("The team's cases");
    await checkPage();

    const today = new Date().toISOString().slice(0, 10);
    await page.fill("#f-from", today);
    await page.selectOption("#f-status", "completed");
    await Promise.all([page.waitForURL(/from=/), page.click("form.filters button[type=submit]")]);
    expect(new URL(page.url()).searchParams.get("from")).toBe(today);
    await page.click(`a:text-is("${caseId}")`);
    await page.waitForURL(new RegExp(`/audit/cases/${caseId}`));
    const rows = await page.locator("[data-testid=trail] tbody tr").evaluateAll((trs) => trs.map((tr) => Array.from(tr.querySelectorAll("td"), (td) => td.textContent)));
    expect(rows[0]!.slice(1, 4)).toEqual(["key dr-a", "submitted the case", caseId]);
    expect(await page.locator("[data-testid=case-facts]").textContent()).toContain("Submitted by dr-a");
    await checkPage();

    await page.click("nav.auditor-nav >> text=Access trail");
    await page.fill("#f-day", today);
    await Promise.all([page.waitForURL(/day=/), page.click("form.filters button[type=submit]")]);
    await checkPage();
    const [download] = await Promise.all([page.waitForEvent("download"), page.click("a:text-is('CSV')")]);
    const csv = await readFile((await download.path())!, "utf8");
    expect(csv.split("\r\n")[0]).toBe("when,who,what,case,from,outcome,request id");
    expect(csv).toContain(`key dr-a,submitted the case,${caseId}`);
    expect(csv).toMatch(/auditor link a-[0-9a-f]{16} \(made by qa-1\),"searched cases \(status=completed from=\d{4}-\d\d-\d\d\), 1 found"/);
    expect(problems).toEqual([]);
  });
});
