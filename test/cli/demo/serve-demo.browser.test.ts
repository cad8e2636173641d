/**
 * The `serve --demo` service as a newcomer sees it: Chromium (playwright-core, Debian's
 * /usr/bin/chromium) opens the signed audit-view link the demo printed for the chest-pain
 * case and finds the scripted-model banner, the path that was repaired with its detector
 * reports and diff, and the evidence behind it; and for the bone-marrow pathway case, the
 * context conflict repaired and the scripted conversation. Every wait is on page state.
 * Screenshots land in test-artifacts/demo/.
 */
import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DiagnosisResult } from "../../../src/core/contracts/diagnosis-result.js";
import { DEMO_MODEL } from "../../../src/cli/demo/demo-backends.js";
import { startDemoService, type RunningDemo } from "../../../src/cli/demo/serve-demo.js";
import type { ViewState } from "../../../src/server/view/view-payload.js";
import { useTempDir } from "../../eval/datasets/dataset-kit.js";
import { LogCapture } from "../../server/http/http-harness.js";
import { openReady, useChromium, watch } from "../../support/browser.js";

const ARTIFACTS = fileURLToPath(new URL("../../../test-artifacts/demo/", import.meta.url));

type View = { __medmmvView: ViewState };

let demo: RunningDemo;
// Before useChromium, so the folder is removed last, after the demo and the browser closed.
const tmp = useTempDir("medmmv-demo-browser-");
const browser = useChromium();
let page: Page;
let result: DiagnosisResult;
const problems: string[] = [];

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  demo = await startDemoService({ HOST: "127.0.0.1", PORT: "0", MEDMMV_DATA_DIR: tmp() }, { handleSignals: false, logStream: new LogCapture() });
  const chest = demo.cases.find((c) => c.slug === "chest-pain")!;
  const res = await fetch(`${demo.server.address}/cases/${chest.caseId}`, { headers: { authorization: `Bearer ${demo.apiKey}` } });
  result = DiagnosisResult.parse(((await res.json()) as { result: unknown }).result);
  const context = await browser().newContext({ viewport: { width: 1400, height: 1000 } });
  page = await context.newPage();
  watch(page, problems);
  // The link alone, no API key: what a colleague handed the link would open.
  await openReady(page, chest.viewUrl);
}, 180_000);

afterAll(async () => {
  await demo?.close();
});

describe("the demo's audit view in Chromium", () => {
  it("says plainly that the model is scripted", async () => {
    const banner = page.locator("[data-testid=scripted-banner]");
    await banner.waitFor({ state: "visible" });
    expect(await banner.textContent()).toMatch(/^Scripted model — demo\. The model answers on this page were written in advance/);
    expect(await banner.textContent()).toContain(DEMO_MODEL);
    expect(await page.locator("[data-testid=answer]").textContent()).toBe("(B) Inferior ST-elevation myocardial infarction");
    const state = await page.evaluate(() => ({ errors: (window as unknown as View).__medmmvView.errors, csp: (window as unknown as View).__medmmvView.cspViolations }));
    expect(state).toEqual({ errors: [], csp: [] });
    expect(problems).toEqual([]);
    await page.screenshot({ path: `${ARTIFACTS}demo-view.png`, fullPage: true });
  });

  it("shows the image check's rejection of ImageDoctor's ECG finding, with its reason (the README's tour)", async () => {
    const flagged = result.provenance.evidenceChecks!.imageDoctor.flatMap((a) => a.flagged);
    expect(flagged.length).toBeGreaterThan(0);
    const rows = await page.locator("[data-testid=checks-table] tr[data-check=image]").evaluateAll((trs) => trs.map((tr) => Array.from(tr.querySelectorAll("td"), (td) => td.textContent)));
    expect(rows.map((r) => [r[1], r[2], r[3]])).toEqual(flagged.map((f) => [f.label, "rejected", f.issue]));
    expect(await page.locator("[data-testid=checks-table]").isVisible()).toBe(true);
  });

  it("shows the repaired path: the rejected claim, the change the repair made, and the accepted attempt", async () => {
    const repaired = result.candidates.find((c) => c.repairs > 0)!;
    expect(repaired).toMatchObject({ initialAnswer: "A", finalAnswer: "B" });
    const row = page.locator(`[data-testid=candidates-table] tr[data-path-id="${repaired.pathId}"]`);
    expect(await row.locator("[data-col=answers]").textContent()).toBe("A \u2192 B");
    expect(await row.locator("[data-col=repairs]").textContent()).toBe("1");

    const history = page.locator(`#repairs details[data-path-id="${repaired.pathId}"]`);
    expect(await history.evaluate((d) => (d as HTMLDetailsElement).open)).toBe(true);
    const first = history.locator('.attempt[data-attempt="1"]');
    expect(await first.textContent()).toContain("hallucination detected");
    expect(await first.textContent()).toContain("The ECG shows ST elevation confined to II, III and aVF with reciprocal depression in aVL");
    const contradicted = first.locator("tr", { has: page.locator(".badge.contradicted") });
    expect(await contradicted.locator("td").first().textContent()).toBe("The ST elevation is diffuse across the leads");
    const removed = await first.locator(".diff .del").allTextContents();
    const added = await first.locator(".diff .add").allTextContents();
    expect(removed.join("\n")).toContain("The ST elevation is diffuse across the leads");
    expect(added.join("\n")).toContain("Reciprocal ST depression argues against pericarditis");
    expect(added.join("\n")).toContain("inferior ST-elevation myocardial infarction");

    const second = history.locator('.attempt[data-attempt="2"]');
    expect(await second.textContent()).toContain("no hallucination detected");
    expect(await second.locator(".badge.contradicted").count()).toBe(0);
    await history.screenshot({ path: `${ARTIFACTS}repair-history.png` });
  });

  it("and the repaired path's evidence: every cited node is in the drawn graph, quote and literature source included", async () => {
    const repaired = result.candidates.find((c) => c.repairs > 0)!;
    const accepted = repaired.hdReports.at(-1)!;
    const cited = [...new Set(accepted.claims.flatMap((c) => c.evidence))];
    expect(cited.length).toBeGreaterThanOrEqual(4);
    const chips = await page.locator(`#repairs details[data-path-id="${repaired.pathId}"] .attempt[data-attempt="2"] .chip`).allTextContents();
    expect(new Set(chips)).toEqual(new Set(cited));
    for (const id of cited) {
      const shown = await page.evaluate((n) => (window as unknown as View).__medmmvView.nodeDisplay(n), id);
      expect(shown, id).not.toBeNull();
    }

    const panel = page.locator("[data-testid=node-panel]");
    const open = async (label: string) => {
      await page.fill("[data-testid=search]", label);
      await page.waitForFunction(() => (window as unknown as View).__medmmvView.matches.length > 0);
      await page.press("[data-testid=search]", "Enter");
      await page.waitForFunction((l) => document.querySelector("[data-testid=node-panel] h3.node-label")?.textContent === l, label);
    };
    await open("reciprocal ST depression in aVL");
    expect(await panel.locator("blockquote.quote").textContent()).toBe("reciprocal ST depression in aVL");
    expect(await panel.locator(".case-text mark").textContent()).toBe("reciprocal ST depression in aVL");
    await open("pericarditis gives widespread ST elevation without reciprocal ST depression");
    expect(await panel.textContent()).toContain("https://literature.example/demo/ecg-localisation");
    await panel.screenshot({ path: `${ARTIFACTS}literature-node.png` });
  });

  it("the selected path's claims light up their evidence when clicked", async () => {
    const claim = result.path!.steps[1]!.claims[1]!;
    expect(claim.text).toBe("Reciprocal ST depression in aVL localises the injury to the inferior wall");
    await page.click('[data-claim="s2c2"]');
    const expected = [...new Set(claim.evidence)].sort();
    await page.waitForFunction((exp) => JSON.stringify((window as unknown as View).__medmmvView.highlighted) === exp, JSON.stringify(expected), { timeout: 5_000 });
    expect(expected).toHaveLength(2);
    expect(problems).toEqual([]);
  });
});

describe("the demo's pathway case in Chromium", () => {
  let marrowPage: Page;
  beforeAll(async () => {
    const marrow = demo.cases.find((c) => c.slug === "bone-marrow")!;
    marrowPage = await page.context().newPage();
    watch(marrowPage, problems);
    await openReady(marrowPage, marrow.viewUrl);
  }, 60_000);

  it("shows the context conflict as a repaired detector finding, and the repair onto the pathway", async () => {
    expect(await marrowPage.locator("[data-testid=answer]").textContent()).toBe("(A) Acute myeloid leukaemia (AML)");
    const finding = marrowPage.locator("#hallucinations tr", { hasText: "context-conflict" });
    await finding.waitFor({ state: "visible" });
    expect(await finding.textContent()).toMatch(/reasoning.*HIGH.*image-quality = low.*diagnosis = aml.*yes$/);
    const history = marrowPage.locator("#repairs details", { hasText: "1 repair" });
    expect(await history.locator('.attempt[data-attempt="1"]').textContent()).toContain("fit no valid path of pathway \"bone-marrow\"");
    // The path's pathway steps as a stepper, the step that leaves the pathway marked.
    const stepper = history.locator('.attempt[data-attempt="1"] [data-testid=pathway-stepper]');
    expect(await stepper.locator("li").count()).toBeGreaterThan(1);
    expect(await stepper.locator("li.off").count()).toBeGreaterThan(0);
    const added = await history.locator('.attempt[data-attempt="1"] .diff .add').allTextContents();
    expect(added.join("\n")).toContain("the image is sufficient for analysis");
    expect(await history.locator('.attempt[data-attempt="2"]').textContent()).toContain("no hallucination detected");
  });

  it("shows the scripted conversation turn by turn, each on the pathway", async () => {
    const rows = marrowPage.locator("#turns tr[data-testid^=turn-]");
    await rows.first().waitFor({ state: "visible" });
    expect(await rows.count()).toBe(3);
    const cells = async (n: number) => (await marrowPage.locator(`[data-testid=turn-${n}] td`).allTextContents()).slice(0, 6);
    expect(await cells(1)).toEqual(["1", "Is the aspirate image of sufficient quality for analysis?", "Yes: the aspirate smear is well spread and well stained, so the image is sufficient for analysis.", "image-quality", "high", "no"]);
    expect((await cells(2)).slice(3)).toEqual(["cell-quality", "adequate", "no"]);
    expect((await cells(3)).slice(3)).toEqual(["diagnosis", "aml", "no"]);
    await marrowPage.locator("#turns").screenshot({ path: `${ARTIFACTS}pathway-conversation.png` });
    expect(problems).toEqual([]);
  });
});
