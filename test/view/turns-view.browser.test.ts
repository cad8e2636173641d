/**
 * The audit view's conversation section in Chromium: the turns in order, each with its
 * pathway step, category and conflict flag, and case/model text shown as text only.
 */
import { existsSync } from "node:fs";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { renderCaseViewHtml } from "../../src/view/render-view.js";
import type { ViewTurn } from "../../src/view/view-payload.js";
import { syntheticCase } from "./view-fixtures.js";

const CHROMIUM = "/usr/bin/chromium";
let browser: Browser;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`browser tests need Chromium at ${CHROMIUM} (apt-get install chromium; .ci/run installs it)`);
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"] });
}, 120_000);
afterAll(async () => {
  await browser?.close();
});

const TURNS: ViewTurn[] = [
  { turn: 1, question: "Is the image of sufficient quality?", answer: "Yes, sufficient.", step: "image-quality", category: "high", contextConflict: false, evidence: [{ id: "f:1", label: "sharp patch" }] },
  { turn: 2, question: "What is the diagnosis?", answer: "Acute myeloid leukemia.", step: "diagnosis", category: "aml", contextConflict: false, evidence: [] },
  { turn: 3, question: "Is the quality <b>acceptable</b>?", answer: "No, low quality.", step: "image-quality", category: "low", contextConflict: true, evidence: [] },
];

describe("audit view: conversation turns", () => {
  it("shows the turns in order with category and conflict flag, as text", async () => {
    const html = renderCaseViewHtml({ ...syntheticCase(12), mode: "offline", turns: TURNS });
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    try {
      await page.setContent(html);
      await page.waitForFunction(() => (window as unknown as { __medmmvView?: { ready: boolean } }).__medmmvView?.ready === true, null, { timeout: 30_000 });
      const rows = await page.$$eval("#turns tbody tr", (trs) => trs.map((tr) => Array.from(tr.querySelectorAll("td"), (td) => td.textContent)));
      expect(rows).toEqual([
        ["1", "Is the image of sufficient quality?", "Yes, sufficient.", "image-quality", "high", "no", "sharp patch"],
        ["2", "What is the diagnosis?", "Acute myeloid leukemia.", "diagnosis", "aml", "no", ""],
        ["3", "Is the quality <b>acceptable</b>?", "No, low quality.", "image-quality", "low", "context conflict", ""],
      ]);
      expect(await page.$$eval("#turns b", (b) => b.length)).toBe(0);
      expect(errors).toEqual([]);
    } finally {
      await page.close();
    }
  });

  it("a case without turns has no conversation section", async () => {
    const page = await browser.newPage();
    try {
      await page.setContent(renderCaseViewHtml({ ...syntheticCase(12), mode: "offline" }));
      await page.waitForFunction(() => (window as unknown as { __medmmvView?: { ready: boolean } }).__medmmvView?.ready === true, null, { timeout: 30_000 });
      expect(await page.$$("#turns")).toHaveLength(0);
    } finally {
      await page.close();
    }
  });
});
