/**
 * The audit view in a real browser: playwright-core driving Debian's Chromium (.ci/run installs
 * it) against a case produced by the real pipeline over the scripted model and search servers.
 * Everything asserted about the drawing is read from the page's own sigma/graphology instances
 * through window.__medmmvView. Screenshots land in test-artifacts/view/.
 */
import { mkdirSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EvidenceGraph } from "../../../src/core/evidence/evidence-graph.js";
import { AGENT_COLORS, BACKGROUND_OPACITY, KIND_STYLE } from "../../../src/server/view/client/palette.js";
import { newViewNonce, renderCaseViewHtml, viewContentSecurityPolicy } from "../../../src/server/view/render-view.js";
import { writeOfflineReport } from "../../../src/server/view/report-command.js";
import { runScriptedCase, syntheticCase, type ScriptedCaseRun } from "./view-fixtures.js";
import type { ViewState } from "../../../src/server/view/view-payload.js";
import { openReady, useChromium, watch } from "../../support/browser.js";

const ARTIFACTS = fileURLToPath(new URL("../../../test-artifacts/view/", import.meta.url));

type Snapshot = Omit<ViewState, "nodeClientPosition" | "nodeDisplay">;

async function snapshot(page: Page): Promise<Snapshot> {
  return page.evaluate(() => {
    const v = (window as unknown as { __medmmvView: ViewState }).__medmmvView;
    return {
      ready: v.ready,
      renderMs: v.renderMs,
      layoutMs: v.layoutMs,
      phases: v.phases,
      nodeCount: v.nodeCount,
      edgeCount: v.edgeCount,
      renderedNodeCount: v.renderedNodeCount,
      renderedEdgeCount: v.renderedEdgeCount,
      highlighted: v.highlighted,
      matches: v.matches,
      selectedNode: v.selectedNode,
      activeClaim: v.activeClaim,
      subgraphNodes: v.subgraphNodes,
      mode: v.mode,
      settled: v.settled,
      graphError: v.graphError,
      cspViolations: v.cspViolations,
      errors: v.errors,
      lastHandlerMs: v.lastHandlerMs,
    };
  });
}

/** Opens the view at `url`, waits until it is drawn, and reads its state. */
async function openSnapshot(page: Page, url: string): Promise<Snapshot> {
  await openReady(page, url);
  return snapshot(page);
}

async function waitForHighlighted(page: Page, expected: string[]): Promise<void> {
  await page.waitForFunction(
    (exp) => JSON.stringify((window as unknown as { __medmmvView: { highlighted: string[] } }).__medmmvView.highlighted) === exp,
    JSON.stringify(expected),
    { timeout: 5_000 },
  );
}

/** The drawing shows every change made so far (sigma applies them on a later animation frame). */
async function waitForSettled(p: Page): Promise<void> {
  await p.waitForFunction(() => (window as unknown as { __medmmvView: ViewState }).__medmmvView.settled === true, null, { timeout: 10_000 });
}

async function waitForMode(p: Page, mode: ViewState["mode"]): Promise<void> {
  await p.waitForFunction((m) => (window as unknown as { __medmmvView: ViewState }).__medmmvView.mode === m, mode, { timeout: 5_000 });
  await waitForSettled(p);
}

async function candidateRows(page: Page) {
  return page.$$eval("[data-testid=candidates-table] tbody tr", (rows) =>
    rows.map((r) => ({
      pathId: (r as HTMLElement).dataset.pathId,
      selected: r.classList.contains("selected"),
      cells: Object.fromEntries(Array.from(r.querySelectorAll("td")).map((td) => [(td as HTMLElement).dataset.col, td.textContent ?? ""])),
    })),
  );
}

const HOSTILE_SCRIPT = "<script>window.__pwned=1</script>";
const HOSTILE_ATTR = `"><img src=x onerror=window.__pwned=1>`;
const HOSTILE_CLOSE = "</script>";
const HOSTILE_URL = "javascript:window.__pwned=1";

/** The real run with script, attribute-breaking and tag-closing text in every kind of field. */
function hostileRun(base: ScriptedCaseRun): ScriptedCaseRun {
  const run = structuredClone(base);
  const evil = `${HOSTILE_SCRIPT} ${HOSTILE_ATTR} ${HOSTILE_CLOSE}`;
  run.caseInput.notes = `${run.caseInput.notes} Evil note: ${evil}`;
  run.caseInput.question = `${run.caseInput.question} ${HOSTILE_ATTR}`;
  run.caseInput.options = { ...run.caseInput.options, F: evil };
  run.caseInput.images[0]!.caption = evil;
  const r = run.result;
  r.caseId = `case ${HOSTILE_SCRIPT}`;
  r.answer = { option: "C", text: evil };
  r.path!.summary = evil;
  r.path!.steps[0]!.text = evil;
  r.path!.steps[0]!.claims[0]!.text = `${HOSTILE_SCRIPT} claim`;
  for (const c of r.candidates) {
    c.pathId = `${c.pathId}${HOSTILE_ATTR}`;
    for (const rep of c.hdReports) {
      rep.issues.push(evil);
      rep.recommendation = evil;
    }
  }
  r.hallucinations.push({ pathId: evil, attempt: 1, stage: "knowledge", severity: "HIGH", claim: evil, issue: evil, resolved: false });
  r.provenance.models = { ...r.provenance.models, executor: evil };
  r.provenance.config = { ...r.provenance.config, note: evil };
  r.provenance.failures = [{ branch: evil, code: "LLM_FATAL", message: evil }];
  r.provenance.untrustedContent = [{ source: evil, note: evil }];
  r.usage.byAgent[evil] = { calls: 1 };
  r.stability.rolloutAnswers.push(evil);

  const g = EvidenceGraph.import(run.fullEvidenceGraph);
  const notesAndQuestion = `${run.caseInput.notes}\n\n${run.caseInput.question}`;
  const quote = `Evil note: ${HOSTILE_SCRIPT}`;
  const at = notesAndQuestion.indexOf(quote);
  const evilText = g.addNode({ kind: "finding", category: "history", label: `${HOSTILE_SCRIPT} label`, detail: evil, source: { agent: "text-doctor", quote, span: [at, at + quote.length] } });
  const evilWeb = g.addNode({
    kind: "knowledge",
    category: "literature",
    label: `${HOSTILE_ATTR} web`,
    source: { agent: "web-search", url: HOSTILE_URL, title: evil, retrievedAt: HOSTILE_CLOSE },
  });
  g.addEdge(evilWeb, evilText, "supports", { agent: "web-search", url: HOSTILE_URL });
  run.fullEvidenceGraph = g.export() as unknown as Record<string, unknown>;
  r.path!.steps[0]!.claims[0]!.evidence = [evilText, evilWeb];
  return run;
}

/** The scripted run with a passage from the local literature corpus (MEDMMV_SEARCH=local) in its graph. */
const CORPUS_URL = "corpus://cardiology/inferior-leads";
function localCorpusRun(base: ScriptedCaseRun): { run: ScriptedCaseRun; nodeId: string; label: string; retrievedAt: string } {
  const run = structuredClone(base);
  const g = EvidenceGraph.import(run.fullEvidenceGraph);
  const label = "inferior leads localise the infarction";
  const retrievedAt = "2026-01-02T03:04:05.000Z";
  const nodeId = g.addNode({ kind: "knowledge", category: "literature", label, source: { agent: "web-search", url: CORPUS_URL, title: "Inferior wall infarction", retrievedAt } });
  run.fullEvidenceGraph = g.export() as unknown as Record<string, unknown>;
  return { run, nodeId, label, retrievedAt };
}

const browser = useChromium();
let server: http.Server;
let baseUrl: string;
let run: ScriptedCaseRun;
let offlineFile: string;
const pages = new Map<string, string>();

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  run = await runScriptedCase();
  const nonce = newViewNonce();
  pages.set("/cases/view", renderCaseViewHtml({ ...run, mode: "served", nonce }));
  pages.set("/cases/hostile", renderCaseViewHtml({ ...hostileRun(run), mode: "served", nonce }));
  pages.set("/cases/local", renderCaseViewHtml({ ...localCorpusRun(run).run, mode: "served", nonce }));
  offlineFile = (await writeOfflineReport(run, `${ARTIFACTS}report.html`)).file;
  server = http.createServer((req, res) => {
    const html = pages.get(req.url ?? "");
    if (!html) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, {
      "content-type": "text/html; charset=utf-8",
      "content-security-policy": `${viewContentSecurityPolicy(nonce)}; frame-ancestors 'none'`,
      "cache-control": "no-store",
    });
    res.end(html);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}, 120_000);

afterAll(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
});

describe("audit view in Chromium", () => {
  let context: BrowserContext;
  let page: Page;
  let watched: ReturnType<typeof watch>;
  let served: Snapshot;

  beforeAll(async () => {
    context = await browser().newContext({ viewport: { width: 1400, height: 1000 } });
    page = await context.newPage();
    watched = watch(page);
    served = await openSnapshot(page, `${baseUrl}/cases/view`);
  }, 60_000);
  afterAll(async () => {
    await context?.close();
  });

  it("draws the whole evidence graph and marks the selected path's subgraph", async () => {
    const full = EvidenceGraph.import(run.fullEvidenceGraph);
    const sub = EvidenceGraph.import(run.result.evidenceGraph);
    expect(full.order).toBeGreaterThan(sub.order);
    expect(served.graphError).toBeNull();
    expect(served.nodeCount).toBe(full.order);
    expect(served.edgeCount).toBe(full.size);
    expect(served.renderedNodeCount).toBe(full.order);
    expect(served.renderedEdgeCount).toBe(full.size);
    expect(served.subgraphNodes).toEqual(sub.nodes().map((n) => n.id));
    expect(served.mode).toBe("path");
    expect(served.cspViolations).toEqual([]);
    expect(served.errors).toEqual([]);
    expect(watched.problems).toEqual([]);
    await page.screenshot({ path: `${ARTIFACTS}served-page.png`, fullPage: true });
  });

  it("colours nodes by source agent and shapes them by kind", async () => {
    const nodes = EvidenceGraph.import(run.fullEvidenceGraph).nodes();
    await page.click("[data-testid=mode-toggle]");
    // mode flips in the click handler; sigma restyles the nodes on its next frame: wait for that frame.
    await waitForMode(page, "full");
    const agents = new Set(nodes.map((n) => n.sources[0]!.agent));
    expect(agents).toEqual(new Set(["text-doctor", "image-doctor", "web-search"]));
    for (const n of nodes) {
      const d = await page.evaluate((id) => (window as unknown as { __medmmvView: ViewState }).__medmmvView.nodeDisplay(id), n.id);
      expect(d, n.id).not.toBeNull();
      expect(d!.color.toLowerCase()).toBe(AGENT_COLORS[n.sources[0]!.agent]);
      expect(d!.shape).toBe(KIND_STYLE[n.kind]!.shape);
      expect(d!.opacity).toBe(1);
    }
    await page.click("[data-testid=mode-toggle]");
    await waitForMode(page, "path");
  });

  it("highlights exactly a claim's evidence nodes when the claim is clicked", async () => {
    const path = run.result.path!;
    const full = EvidenceGraph.import(run.fullEvidenceGraph);
    let clicked = 0;
    for (const [i, step] of path.steps.entries()) {
      for (const [j, claim] of step.claims.entries()) {
        const id = `s${i + 1}c${j + 1}`;
        const expected = [...new Set(claim.evidence.filter((e) => full.hasNode(e)))].sort();
        expect(expected.length).toBeGreaterThan(0);
        await page.click(`[data-claim="${id}"]`);
        await waitForHighlighted(page, expected);
        const s = await snapshot(page);
        expect(s.highlighted).toEqual(expected);
        expect(s.activeClaim).toBe(id);
        expect(await page.getAttribute(`[data-claim="${id}"]`, "data-verdict")).toBe(claim.verdict);
        expect(await page.getAttribute(`[data-claim="${id}"]`, "class")).toContain("active");
        clicked++;
      }
    }
    expect(clicked).toBe(path.steps.flatMap((s) => s.claims).length);
    await page.screenshot({ path: `${ARTIFACTS}claim-highlight.png` });
    await page.click("[data-testid=clear-highlight]");
    await waitForHighlighted(page, []);
  });

  it("shows a node's provenance with its quote highlighted in the case notes when the node is clicked", async () => {
    const full = EvidenceGraph.import(run.fullEvidenceGraph);
    const cited = run.result.path!.steps[0]!.claims[0]!.evidence[0]!;
    const node = full.getNode(cited)!;
    expect(node.source.agent).toBe("text-doctor");
    await page.evaluate(() => window.scrollTo(0, 0));
    // The claim clicks above animate the camera: read positions once it stopped and was drawn.
    await waitForSettled(page);
    const at = await page.evaluate((id) => (window as unknown as { __medmmvView: ViewState }).__medmmvView.nodeClientPosition(id), cited);
    expect(at).not.toBeNull();
    const box = (await page.locator("#graph").boundingBox())!;
    expect(at!.x).toBeGreaterThan(box.x);
    expect(at!.x).toBeLessThan(box.x + box.width);
    await page.mouse.click(at!.x, at!.y);
    await page.waitForFunction((id) => (window as unknown as { __medmmvView: { selectedNode: string | null } }).__medmmvView.selectedNode === id, cited, { timeout: 5_000 });
    const panel = page.locator("[data-testid=node-panel]");
    expect(await panel.locator("h3.node-label").textContent()).toBe(node.label);
    expect(await panel.locator("blockquote.quote").textContent()).toBe(node.source.quote);
    expect(await panel.locator(".case-text mark").textContent()).toBe(node.source.quote);
    expect(await panel.locator(".case-text").textContent()).toBe(`${run.caseInput.notes}\n\n${run.caseInput.question}`);
    await page.screenshot({ path: `${ARTIFACTS}node-provenance.png` });
  });

  it("shows an image finding with its image, and literature with its URL and retrieval time", async () => {
    const full = EvidenceGraph.import(run.fullEvidenceGraph);
    const imageNode = full.nodes().find((n) => n.source.agent === "image-doctor")!;
    const webNode = full.nodes().find((n) => n.source.agent === "web-search" && n.source.url)!;
    expect(imageNode && webNode).toBeTruthy();

    await page.fill("[data-testid=search]", imageNode.label.slice(0, 10));
    await page.waitForFunction((id) => (window as unknown as { __medmmvView: { matches: string[] } }).__medmmvView.matches.includes(id), imageNode.id);
    await page.click(`[data-testid=matches] [data-node="${imageNode.id}"]`);
    await page.waitForFunction((id) => (window as unknown as { __medmmvView: { selectedNode: string | null } }).__medmmvView.selectedNode === id, imageNode.id);
    const panel = page.locator("[data-testid=node-panel]");
    const src = await panel.locator("img").getAttribute("src");
    expect(src).toBe(`data:image/png;base64,${run.caseInput.images[0]!.data}`);
    expect(await panel.textContent()).toContain(`Finding: ${imageNode.label}`);
    expect(await panel.textContent()).toContain("12-lead ECG strip");

    await page.fill("[data-testid=search]", webNode.label);
    await page.waitForFunction((id) => (window as unknown as { __medmmvView: { matches: string[] } }).__medmmvView.matches.includes(id), webNode.id);
    await page.press("[data-testid=search]", "Enter");
    await page.waitForFunction((id) => (window as unknown as { __medmmvView: { selectedNode: string | null } }).__medmmvView.selectedNode === id, webNode.id);
    const link = panel.locator(`a[href="${webNode.source.url}"]`).first();
    expect(await link.getAttribute("rel")).toBe("noopener noreferrer");
    expect(await link.getAttribute("target")).toBe("_blank");
    expect(await panel.textContent()).toContain(`Retrieved: ${webNode.source.retrievedAt}`);
    // Literature URLs are shown, never fetched.
    expect(watched.requests.filter((u) => u.includes("literature.example"))).toEqual([]);
    await page.fill("[data-testid=search]", "");
  });

  it("shows the candidates table as stored in the result", async () => {
    const rows = await candidateRows(page);
    const cands = run.result.candidates;
    expect(cands.length).toBeGreaterThan(1);
    expect(rows.map((r) => r.pathId)).toEqual(cands.map((c) => c.pathId));
    for (const [i, c] of cands.entries()) {
      const row = rows[i]!;
      expect(row.selected).toBe(c.selected);
      expect(row.cells.answers).toBe(`${c.initialAnswer ?? "\u2014"} \u2192 ${c.finalAnswer ?? "\u2014"}`);
      expect(Number(row.cells.repairs)).toBe(c.repairs);
      expect(Number(row.cells.evidence)).toBeCloseTo(c.scores!.evidence, 3);
      expect(Number(row.cells.coherence)).toBeCloseTo(c.scores!.coherence, 3);
      expect(Number(row.cells.repairPenalty)).toBeCloseTo(c.scores!.repairPenalty, 3);
      expect(Number(row.cells.cu)).toBeCloseTo(c.scores!.cu, 3);
    }
    expect(rows.filter((r) => r.selected).map((r) => r.pathId)).toEqual([run.result.path!.id]);
  });

  it("shows the differential ranked as stored in the result, with the runs behind each diagnosis", async () => {
    const diff = run.result.differential!;
    expect(diff.length).toBeGreaterThan(0);
    const rows = await page.$$eval("[data-testid=differential-table] tbody tr", (trs) =>
      trs.map((r) => Object.fromEntries(Array.from(r.querySelectorAll("td")).map((td) => [(td as HTMLElement).dataset.col, td.textContent ?? ""]))),
    );
    expect(rows.map((r) => [r.rank, r.diagnosis, r.runs])).toEqual(diff.map((d) => [String(d.rank), `${d.answer.option ? `(${d.answer.option}) ` : ""}${d.answer.text}`, `${d.rollouts} of ${d.of}`]));
    expect(rows.map((r) => r.path)).toEqual(diff.map((d) => (d.candidateIndex === null ? "" : run.result.candidates[d.candidateIndex]!.pathId)));
  });

  it("shows each path's repair history with the diff every repair caused", async () => {
    const repaired = run.result.candidates.filter((c) => c.repairs > 0);
    expect(repaired.length).toBeGreaterThan(0);
    for (const c of run.result.candidates) {
      const details = page.locator(`#repairs details[data-path-id="${c.pathId}"]`);
      expect(await details.locator(".attempt").count()).toBe(c.hdReports.length);
      const flagged = c.hdReports.filter((r) => r.hallucinationDetected).length;
      expect(await details.locator(".attempt .bad").count()).toBe(flagged);
      if (c.repairs > 0) {
        expect(await details.locator(".diff").count()).toBe(c.hdReports.length - 1);
        expect(await details.locator(".diff .add").count()).toBeGreaterThan(0);
        expect(await details.locator(".diff .del").count()).toBeGreaterThan(0);
      }
    }
  });

  it("shows stability, usage and provenance from the result", async () => {
    const chips = await page.locator("#stability .chip").allTextContents();
    expect(chips).toEqual(run.result.stability.rolloutAnswers.map((a) => a ?? "\u2014"));
    expect(await page.locator("#stability").textContent()).toContain(run.result.stability.rgm.toFixed(3));
    const agents = await page.$$eval("#usage tr[data-agent]", (rows) => rows.map((r) => (r as HTMLElement).dataset.agent));
    expect(agents).toEqual(Object.keys(run.result.usage.byAgent));
    const prov = (await page.locator("#provenance").textContent()) ?? "";
    for (const hash of Object.values(run.result.provenance.prompts)) expect(prov).toContain(hash);
    for (const model of Object.values(run.result.provenance.models)) expect(prov).toContain(model);
  });

  it("renders the same from the offline report file with the network off", async () => {
    const offline = await browser().newContext({ viewport: { width: 1400, height: 1000 } });
    try {
      await offline.setOffline(true);
      await offline.route("**/*", (route) => (route.request().url().startsWith("file:") ? route.continue() : route.abort()));
      const p = await offline.newPage();
      const w = watch(p);
      const s = await openSnapshot(p, pathToFileURL(offlineFile).href);
      expect(s.nodeCount).toBe(served.nodeCount);
      expect(s.edgeCount).toBe(served.edgeCount);
      expect(s.renderedNodeCount).toBe(served.renderedNodeCount);
      expect(s.subgraphNodes).toEqual(served.subgraphNodes);
      expect(await candidateRows(p)).toEqual(await candidateRows(page));
      expect(await p.locator("[data-testid=path-panel]").textContent()).toBe(await page.locator("[data-testid=path-panel]").textContent());
      const claim = run.result.path!.steps[0]!.claims[0]!;
      await p.click('[data-claim="s1c1"]');
      await waitForHighlighted(p, [...new Set(claim.evidence)].sort());
      expect(s.cspViolations).toEqual([]);
      expect(w.problems).toEqual([]);
      expect(w.requests.filter((u) => !u.startsWith("file:") && !u.startsWith("data:"))).toEqual([]);
      await p.screenshot({ path: `${ARTIFACTS}offline-report.png` });
    } finally {
      await offline.close();
    }
  });

  it("shows hostile case and model text literally and runs none of it", async () => {
    const p = await context.newPage();
    const w = watch(p);
    try {
      const s = await openSnapshot(p, `${baseUrl}/cases/hostile`);
      expect(s.nodeCount).toBe(served.nodeCount + 2);
      // Exercise the panels that render the hostile text: the claim, its nodes' provenance.
      await p.click('[data-claim="s1c1"]');
      await p.waitForFunction(() => (window as unknown as { __medmmvView: { highlighted: string[] } }).__medmmvView.highlighted.length === 2);
      for (const id of (await snapshot(p)).highlighted) {
        await p.click(`[data-claim="s1c1"] [data-node="${id}"]`);
        await p.waitForFunction((x) => (window as unknown as { __medmmvView: { selectedNode: string | null } }).__medmmvView.selectedNode === x, id);
        const panel = (await p.locator("[data-testid=node-panel]").textContent()) ?? "";
        expect(panel.includes(HOSTILE_SCRIPT) || panel.includes(HOSTILE_ATTR)).toBe(true);
      }
      await p.fill("[data-testid=search]", "<script>");
      await p.waitForFunction(() => (window as unknown as { __medmmvView: { matches: string[] } }).__medmmvView.matches.length === 1);

      expect(await p.evaluate(() => (window as unknown as { __pwned?: unknown }).__pwned)).toBeUndefined();
      const text = await p.evaluate(() => document.body.innerText);
      expect(text).toContain(HOSTILE_SCRIPT);
      expect(text).toContain(HOSTILE_ATTR);
      expect(text).toContain(HOSTILE_CLOSE);
      expect(text).toContain(HOSTILE_URL);
      expect(await p.locator('a[href^="javascript:"]').count()).toBe(0);
      expect(await p.locator('img[src="x"]').count()).toBe(0);
      expect(await p.evaluate(() => document.scripts.length)).toBe(2);
      expect(await p.title()).toBe(`medmmv audit \u2014 case ${HOSTILE_SCRIPT}`);
      expect(w.problems).toEqual([]);
      expect(s.cspViolations).toEqual([]);
      await p.screenshot({ path: `${ARTIFACTS}hostile.png` });
    } finally {
      await p.close();
    }
  });
});

describe("audit view while frames are pending", () => {
  // The flake behind issue 17 (opacity 0.25 read after the mode toggle) forced on purpose: the
  // page's frames are held, so the click has flipped the mode but sigma has not yet restyled the
  // nodes. What the page reports must say so (settled false) until the frame is drawn.
  it("reports settled only once the frame showing the change is drawn", async () => {
    const context = await browser().newContext({ viewport: { width: 1400, height: 1000 } });
    try {
      const page = await context.newPage();
      const w = watch(page);
      await page.addInitScript(() => {
        const queued = new Map<number, FrameRequestCallback>();
        const native = window.requestAnimationFrame.bind(window);
        const cancelNative = window.cancelAnimationFrame.bind(window);
        let hold = false;
        let next = -1;
        window.requestAnimationFrame = (cb) => {
          if (!hold) return native(cb);
          const id = next--;
          queued.set(id, cb);
          return id;
        };
        window.cancelAnimationFrame = (id) => (queued.delete(id) ? undefined : cancelNative(id));
        const w = window as unknown as { __holdFrames: () => void; __releaseFrames: () => void };
        w.__holdFrames = () => {
          hold = true;
        };
        w.__releaseFrames = () => {
          hold = false;
          const cbs = [...queued.values()];
          queued.clear();
          for (const cb of cbs) native(cb);
        };
      });
      await openSnapshot(page, `${baseUrl}/cases/view`);
      await waitForSettled(page);
      const sub = new Set(EvidenceGraph.import(run.result.evidenceGraph).nodes().map((n) => n.id));
      const outside = EvidenceGraph.import(run.fullEvidenceGraph).nodes().find((n) => !sub.has(n.id) && n.status !== "retracted");
      expect(outside, "the scripted case has an active node outside E_p").toBeDefined();
      const read = () =>
        page.evaluate((id) => {
          const v = (window as unknown as { __medmmvView: ViewState }).__medmmvView;
          return { mode: v.mode, settled: v.settled, opacity: v.nodeDisplay(id)!.opacity };
        }, outside!.id);
      expect(await read()).toEqual({ mode: "path", settled: true, opacity: BACKGROUND_OPACITY });

      await page.evaluate(() => (window as unknown as { __holdFrames: () => void }).__holdFrames());
      await page.click("[data-testid=mode-toggle]");
      // What the old test read: the mode already says "full", the drawing is still the path view.
      expect(await read()).toEqual({ mode: "full", settled: false, opacity: BACKGROUND_OPACITY });

      await page.evaluate(() => (window as unknown as { __releaseFrames: () => void }).__releaseFrames());
      await waitForSettled(page);
      expect(await read()).toEqual({ mode: "full", settled: true, opacity: 1 });
      expect(w.problems).toEqual([]);
    } finally {
      await context.close();
    }
  });
});

describe("audit view without WebGL", () => {
  it("says the graph cannot be drawn and keeps the rest of the page working", async () => {
    const context = await browser().newContext({ viewport: { width: 1200, height: 900 } });
    try {
      const page = await context.newPage();
      // As on a machine whose browser has WebGL 2 switched off.
      await page.addInitScript(() => {
        const original = HTMLCanvasElement.prototype.getContext;
        HTMLCanvasElement.prototype.getContext = function (this: HTMLCanvasElement, type: string, ...rest: unknown[]) {
          if (type === "webgl2" || type === "webgl") return null;
          return (original as (...a: unknown[]) => unknown).call(this, type, ...rest);
        } as typeof original;
      });
      const s = await openSnapshot(page, pathToFileURL(offlineFile).href);
      expect(s.graphError).not.toBeNull();
      expect(await page.locator(".graph-error").textContent()).toContain("could not be drawn");
      expect(s.nodeCount).toBe(EvidenceGraph.import(run.fullEvidenceGraph).order);
      expect(s.renderedNodeCount).toBe(0);
      expect((await candidateRows(page)).map((r) => r.pathId)).toEqual(run.result.candidates.map((c) => c.pathId));
      const cited = run.result.path!.steps[0]!.claims[0]!.evidence[0]!;
      await page.click(`[data-claim="s1c1"] [data-node="${cited}"]`);
      expect(await page.locator("[data-testid=node-panel] .case-text mark").count()).toBe(1);
    } finally {
      await context.close();
    }
  });
});

describe("audit view of a failed case", () => {
  it("shows the failure and an empty graph without errors", async () => {
    const base = syntheticCase(3);
    const failed = {
      result: {
        ...base.result,
        status: "failed" as const,
        answer: null,
        answerSupport: null,
        path: null,
        evidenceGraph: null,
        candidates: [],
        error: { code: "PIPELINE_FAILED", message: "every rollout failed" },
      },
      fullEvidenceGraph: null,
      caseInput: null,
    };
    const file = (await writeOfflineReport(failed, `${ARTIFACTS}failed.html`)).file;
    const context = await browser().newContext({ viewport: { width: 1200, height: 900 } });
    try {
      const page = await context.newPage();
      const w = watch(page);
      const s = await openSnapshot(page, pathToFileURL(file).href);
      expect(s.nodeCount).toBe(0);
      expect(s.edgeCount).toBe(0);
      expect(s.errors).toEqual([]);
      expect(w.problems).toEqual([]);
      expect(await page.locator("body").textContent()).toContain("Error PIPELINE_FAILED: every rollout failed");
      expect(await page.locator("[data-testid=path-panel]").textContent()).toContain("No path was selected");
      expect(await page.locator("[data-testid=candidates-table] tbody tr").count()).toBe(0);
    } finally {
      await context.close();
    }
  });
});

describe("audit view with 300 evidence nodes", () => {
  it("renders every node, handles a claim click and draws retracted nodes faded", async () => {
    const synthetic = syntheticCase(300);
    const file = (await writeOfflineReport(synthetic, `${ARTIFACTS}synthetic-300.html`)).file;
    const context = await browser().newContext({ viewport: { width: 1400, height: 1000 } });
    try {
      const page = await context.newPage();
      const w = watch(page);
      const wallStart = Date.now();
      const s = await openSnapshot(page, pathToFileURL(file).href);
      const wallMs = Date.now() - wallStart;
      const g = EvidenceGraph.import(synthetic.fullEvidenceGraph);
      expect(s.nodeCount).toBe(300);
      expect(s.edgeCount).toBe(g.size);
      // A large graph opens on the selected path alone (the rest hidden, not a hairball); the full graph is a click away.
      expect(s.mode).toBe("path");
      expect(s.renderedNodeCount).toBe(s.subgraphNodes.length);
      console.log(`[view perf] 300 nodes / ${g.size} edges: renderMs=${s.renderMs?.toFixed(0)} layoutMs=${s.layoutMs?.toFixed(0)} wall=${wallMs}ms phases=${JSON.stringify(s.phases)}`);
      // The page measures itself; the numbers are logged, not bounded: on a shared 2-core machine
      // they measure the scheduler as much as the code (timing claims belong in npm run bench).
      // So the checks are only that each was measured (null, or no phase, for a step the page skipped).
      expect(s.renderMs).toBeGreaterThan(0);
      expect(typeof s.layoutMs).toBe("number");
      expect(typeof s.phases.payload).toBe("number");

      // After render a click is handled: the claim's evidence is highlighted.
      const claim = synthetic.result.path!.steps[0]!.claims[0]!;
      const t = Date.now();
      await page.click('[data-claim="s1c1"]');
      await waitForHighlighted(page, [...claim.evidence].sort());
      const clickMs = Date.now() - t;
      const handlerMs = (await snapshot(page)).lastHandlerMs;
      console.log(`[view perf] claim click to highlight: ${clickMs}ms (handler ${handlerMs?.toFixed(1)}ms)`);
      // The click went through the page's own handler, which timed itself (null before any click).
      expect(typeof handlerMs).toBe("number");

      // Retracted nodes are drawn faded and labelled as such.
      await page.click("[data-testid=mode-toggle]");
      await waitForMode(page, "full");
      expect((await snapshot(page)).renderedNodeCount).toBe(300);
      const retracted = g.nodes().filter((n) => n.status === "retracted");
      expect(retracted.length).toBeGreaterThan(0);
      for (const n of retracted) {
        const d = await page.evaluate((id) => (window as unknown as { __medmmvView: ViewState }).__medmmvView.nodeDisplay(id), n.id);
        expect(d!.opacity).toBeLessThan(1);
        expect(d!.label).toContain("(retracted)");
      }
      expect(w.problems).toEqual([]);
      await page.screenshot({ path: `${ARTIFACTS}synthetic-300.png` });
    } finally {
      await context.close();
    }
  });
});

describe("audit view of a local-corpus passage", () => {
  it("shows a literature node from the local corpus with its corpus provenance as text, never as a link", async () => {
    const { nodeId, label, retrievedAt } = localCorpusRun(run);
    const context = await browser().newContext({ viewport: { width: 1400, height: 1000 } });
    try {
      const page = await context.newPage();
      const watched = watch(page);
      await openSnapshot(page, `${baseUrl}/cases/local`);
      await page.fill("[data-testid=search]", label);
      await page.waitForFunction((id) => (window as unknown as { __medmmvView: { matches: string[] } }).__medmmvView.matches.includes(id), nodeId);
      await page.press("[data-testid=search]", "Enter");
      await page.waitForFunction((id) => (window as unknown as { __medmmvView: { selectedNode: string | null } }).__medmmvView.selectedNode === id, nodeId);
      const panel = page.locator("[data-testid=node-panel]");
      const text = await panel.textContent();
      expect(text).toContain(`Local corpus passage: ${CORPUS_URL}`);
      expect(text).toContain(`Retrieved: ${retrievedAt}`);
      expect(text).toContain("searched offline");
      expect(await panel.locator("a[href^='corpus:']").count()).toBe(0);
      expect(watched.problems).toEqual([]);
    } finally {
      await context.close();
    }
  }, 60_000);
});

describe("audit view of a case from a FHIR Bundle", () => {
  it("names the FHIR resource a quote was read from in the node panel", async () => {
    const base = syntheticCase(12);
    const g = EvidenceGraph.import(base.fullEvidenceGraph!);
    const quoted = g.nodes().find((n) => n.source.agent === "text-doctor")!;
    // What the TextDoctor records for a line of FHIR-rendered notes (src/core/agents/text-doctor.ts).
    const fhirRun = structuredClone(base);
    const nodes = (fhirRun.fullEvidenceGraph as { nodes: Array<{ key: string; attributes: { source: Record<string, unknown>; sources?: Array<Record<string, unknown>> } }> }).nodes;
    const stored = nodes.find((n) => n.key === quoted.id)!;
    stored.attributes.source.resource = "Observation/bp-1";
    for (const s of stored.attributes.sources ?? []) s.resource = "Observation/bp-1";
    const file = (await writeOfflineReport(fhirRun, `${ARTIFACTS}fhir-source.html`)).file;
    const context = await browser().newContext({ viewport: { width: 1200, height: 900 } });
    try {
      const page = await context.newPage();
      const w = watch(page);
      await openSnapshot(page, pathToFileURL(file).href);
      await page.fill("[data-testid=search]", quoted.label);
      await page.press("[data-testid=search]", "Enter");
      await page.waitForFunction((id) => (window as unknown as { __medmmvView: { selectedNode: string | null } }).__medmmvView.selectedNode === id, quoted.id, { timeout: 5_000 });
      const chip = page.locator("[data-testid=node-panel] [data-source-resource]");
      expect(await chip.getAttribute("data-source-resource")).toBe("Observation/bp-1");
      expect(await chip.textContent()).toBe("FHIR resource: Observation/bp-1");
      expect(w.problems).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
