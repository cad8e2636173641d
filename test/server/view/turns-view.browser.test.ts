/**
 * The audit view's conversation section in Chromium: the turns in order, each with its
 * pathway step, category and conflict flag, and case/model text shown as text only.
 */
import { describe, expect, it } from "vitest";
import { renderCaseViewHtml } from "../../../src/server/view/render-view.js";
import type { ViewTurn } from "../../../src/server/view/view-payload.js";
import { useChromium, waitReady, watch } from "../../support/browser.js";
import { syntheticCase } from "./view-fixtures.js";

const browser = useChromium();

const TURNS: ViewTurn[] = [
  { turn: 1, question: "Is the image of sufficient quality?", answer: "Yes, sufficient.", step: "image-quality", category: "high", contextConflict: false, evidence: [{ id: "f:1", label: "sharp patch" }] },
  { turn: 2, question: "What is the diagnosis?", answer: "Acute myeloid leukemia.", step: "diagnosis", category: "aml", contextConflict: false, evidence: [] },
  { turn: 3, question: "Is the quality <b>acceptable</b>?", answer: "No, low quality.", step: "image-quality", category: "low", contextConflict: true, evidence: [] },
];

describe("audit view: conversation turns", () => {
  it("shows the turns in order with category and conflict flag, as text", async () => {
    const html = renderCaseViewHtml({ ...syntheticCase(12), mode: "offline", turns: TURNS });
    const page = await browser().newPage();
    const { problems } = watch(page);
    try {
      await page.setContent(html);
      await waitReady(page);
      const rows = await page.$$eval("#turns tbody tr", (trs) => trs.map((tr) => Array.from(tr.querySelectorAll("td"), (td) => td.textContent)));
      expect(rows).toEqual([
        ["1", "Is the image of sufficient quality?", "Yes, sufficient.", "image-quality", "high", "no", "sharp patch"],
        ["2", "What is the diagnosis?", "Acute myeloid leukemia.", "diagnosis", "aml", "no", ""],
        ["3", "Is the quality <b>acceptable</b>?", "No, low quality.", "image-quality", "low", "context conflict", ""],
      ]);
      expect(await page.$$eval("#turns b", (b) => b.length)).toBe(0);
      expect(problems).toEqual([]);
    } finally {
      await page.close();
    }
  });

  it("a case without turns has no conversation section", async () => {
    const page = await browser().newPage();
    try {
      await page.setContent(renderCaseViewHtml({ ...syntheticCase(12), mode: "offline" }));
      await waitReady(page);
      expect(await page.$$("#turns")).toHaveLength(0);
    } finally {
      await page.close();
    }
  });
});
