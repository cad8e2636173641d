import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadOutcomes, pairedReport } from "../../src/eval/paired-report.js";
import { runEval } from "../../src/eval/runner.js";
import { comparisonHtml } from "../../src/eval/summary-html.js";
import { SUMMARY_HTML } from "../../src/eval/summary.js";
import type { EvalSummary } from "../../src/eval/summary.js";
import { useChromium, watch } from "../support/browser.js";
import { useScriptedServers } from "../support/scripted-servers-fixture.js";
import { answerByItem, evalScenario, readItems, SAMPLES } from "./eval-fixtures.js";

const servers = useScriptedServers({ scenario: evalScenario({}) });
const browser = useChromium();
const input = path.join(SAMPLES, "medqa.jsonl");
let tmp: string;
let runs: Array<{ dir: string; summary: EvalSummary }>;

beforeAll(async () => {
  tmp = await mkdtemp(path.join(tmpdir(), "medmmv-summary-html-"));
  const items = await readItems("medqa", input);
  const config = servers.config({ MEDMMV_PRICES: JSON.stringify({ "scripted-executor": { input: 1, output: 2 } }) });
  // Self-consistency (a vote share to calibrate) right on the first three items; CoT right on the first.
  servers.model.setScenario(evalScenario({ answerFor: answerByItem(items, (it) => (items.indexOf(it) < 3 ? "gold" : "wrong")) }));
  const sc = await runEval({ dataset: "medqa", input, method: "self-consistency", pipeline: { k: 3 }, runs: 2, out: path.join(tmp, "sc") }, { config, progress: null });
  servers.model.setScenario(evalScenario({ answerFor: answerByItem(items, (it) => (items.indexOf(it) < 1 ? "gold" : "wrong")) }));
  const cot = await runEval({ dataset: "medqa", input, method: "cot", runs: 2, out: path.join(tmp, "cot") }, { config, progress: null });
  runs = [sc, cot];
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

/** Opens a file offline: every request but the file itself is refused and recorded. */
async function openOffline(file: string) {
  const page = await browser().newPage();
  const seen = watch(page);
  const url = pathToFileURL(file).href;
  const refused: string[] = [];
  await page.route("**/*", (route) => (route.request().url() === url ? route.continue() : (refused.push(route.request().url()), route.abort())));
  await page.goto(url);
  return { page, seen, refused };
}

const plotTexts = (page: import("playwright-core").Page) =>
  page.$$eval("figure.plot", (figs) => figs.map((f) => ({ id: f.getAttribute("data-plot"), caption: f.querySelector("figcaption")?.textContent ?? "", svg: f.querySelectorAll("svg").length, marks: f.querySelectorAll("svg path, svg line, svg rect, svg circle").length, text: f.textContent ?? "" })));

describe("summary.html, offline in Chromium", () => {
  it("a run's page shows its plots with axes, units and n, and fetches nothing", async () => {
    const { page, seen, refused } = await openOffline(path.join(runs[0]!.dir, SUMMARY_HTML));
    const plots = await plotTexts(page);
    expect(plots.map((p) => p.id)).toEqual(["accuracy-by-run", "stratum-meta_info", "reliability", "risk-coverage", "cost-per-correct"]);
    // The page opens with its title, and every plot is captioned with its own.
    expect(await page.locator("h1").first().textContent()).toMatch(/^Eval: /);
    expect(plots.map((p) => p.caption)).toEqual(["Accuracy by run", "Accuracy by meta_info", "Reliability diagram: vote share", "Risk–coverage: ranked by vote share", "Cost per correct answer"]);
    for (const p of plots) {
      expect(p.svg).toBe(1);
      expect(p.marks).toBeGreaterThan(5);
      expect(p.text).toMatch(/n ?= ?\d+/);
    }
    const byId = Object.fromEntries(plots.map((p) => [p.id, p.text]));
    expect(byId["reliability"]).toContain("mean vote share in bin (0–1)");
    expect(byId["reliability"]).toContain("accuracy in bin (%)");
    expect(byId["risk-coverage"]).toContain("coverage: share of records acted on (%)");
    expect(byId["risk-coverage"]).toContain("AURC");
    expect(byId["cost-per-correct"]).toContain("cost per correct answer (USD)");
    // The tables are there too, with their intervals.
    expect(await page.locator("table").count()).toBeGreaterThan(3);
    expect(await page.locator("section.report").textContent()).toMatch(/75\.0 \[/);
    expect(refused).toEqual([]);
    expect(seen.problems).toEqual([]);
    await page.close();
  });

  it("a comparison's page shows the paired differences", async () => {
    const names = ["sc", "cot"];
    const paired = pairedReport(names, await Promise.all(runs.map((r) => loadOutcomes(r.dir))), runs.map((r) => r.summary));
    const file = path.join(tmp, "report.html");
    await writeFile(file, await comparisonHtml(runs.map((r) => r.summary), names, paired, "# Eval report\n\n| a | b |\n|---|---|\n| <script>alert(1)</script> | 2 |\n"));
    const { page, seen, refused } = await openOffline(file);
    const plots = await plotTexts(page);
    expect(plots.map((p) => p.id)).toEqual(["accuracy-by-run-folder", "paired-differences", "reliability-0", "risk-coverage-0", "cost-per-correct"]);
    const diff = plots.find((p) => p.id === "paired-differences")!;
    expect(diff.text).toContain("difference in accuracy (percentage points)");
    expect(diff.text).toContain("sc − cot (4 items)");
    // Markdown's raw HTML is text, not a script.
    expect(await page.locator("section.report").textContent()).toContain("<script>alert(1)</script>");
    expect(await page.locator("section.report script").count()).toBe(0);
    expect(refused).toEqual([]);
    expect(seen.problems).toEqual([]);
    await page.close();
  });
});
