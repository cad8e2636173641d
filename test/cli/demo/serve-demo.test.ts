/**
 * `medmmv serve --demo` in process: the real service on loopback, the scripted model and
 * search servers behind it, the bundled cases submitted at start. What a newcomer clicks
 * through must be there (docs, key, signed links, events), every result must say it is
 * scripted, and the demo must refuse to face the network or another store's cases.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DiagnosisResult } from "../../../src/core/contracts/diagnosis-result.js";
import { DEMO_MODEL } from "../../../src/cli/demo/demo-backends.js";
import { describeDemo, startDemoService, type RunningDemo } from "../../../src/cli/demo/serve-demo.js";
import { EvidenceGraph } from "../../../src/core/evidence/evidence-graph.js";
import { loadPathway } from "../../../src/core/pathways/load-pathway.js";
import { findContextConflict } from "../../../src/core/pathways/path-conflict.js";
import { openStore } from "../../../src/server/store/open-store.js";
import { useTempDir } from "../../eval/datasets/dataset-kit.js";
import { LogCapture } from "../../server/http/http-harness.js";
import { PG_TEST_URL, usePgSchemas } from "../../support/pg-schemas.js";
import { rejection } from "../../support/rejection.js";

const ENV = { HOST: "127.0.0.1", PORT: "0", MEDMMV_LOG_LEVEL: "warn" };
const opts = () => ({ handleSignals: false, logStream: new LogCapture() });

const tmp = useTempDir("medmmv-serve-demo-");

describe("serve --demo refuses", () => {
  it("a non-loopback HOST, before opening any store or port", async () => {
    for (const host of ["0.0.0.0", "::", "192.168.1.20", "medmmv.example.org"]) {
      const dataDir = path.join(tmp(), `host-${host.replace(/[^a-z0-9]/gi, "_")}`);
      const e = await rejection(startDemoService({ ...ENV, HOST: host, MEDMMV_DATA_DIR: dataDir }, opts()));
      expect(e.code).toBe("CONFIG_INVALID");
      expect(e.message).toBe(
        `serve --demo listens on loopback only, and HOST=${host} is not a loopback address: unset HOST or set HOST=127.0.0.1 (the demo's answers are scripted; it is not a service for other machines)`,
      );
      expect(existsSync(dataDir)).toBe(false);
    }
  });

  it("a store that already holds cases the demo did not create", async () => {
    const dataDir = path.join(tmp(), "foreign");
    const store = await openStore({ databaseUrl: null, dataDir: path.join(dataDir, "demo") });
    await store.createCase({ id: "real-1", owner: "cli", input: { id: "real-1", question: "Q?", images: [] }, options: {} });
    await store.close();
    const e = await rejection(startDemoService({ ...ENV, MEDMMV_DATA_DIR: dataDir }, opts()));
    expect(e.code).toBe("CONFLICT");
    expect(e.message).toContain(`refusing to start the demo on the store in ${path.join(dataDir, "demo")}: it holds 1 case that the demo did not create`);
    expect(e.message).toMatch(/set MEDMMV_DATA_DIR to an empty directory/);
    // Nothing touched it: the case is still queued, not run by the script.
    const after = await openStore({ databaseUrl: null, dataDir: path.join(dataDir, "demo") });
    expect((await after.getCase("real-1"))?.status).toBe("queued");
    await after.close();
  });
});

describe("serve --demo on PostgreSQL (DATABASE_URL)", () => {
  const url = PG_TEST_URL;
  const pgSchemas = usePgSchemas();

  it("refuses a database that holds cases of a real service, and runs nothing on it", async () => {
    const schema = pgSchemas.newSchema();
    const store = await openStore({ databaseUrl: url, dataDir: tmp() }, { pgSchema: schema });
    await store.createCase({ id: "real-pg-1", owner: "5f2a-some-key-hash", input: { id: "real-pg-1", question: "Q?", images: [] }, options: {} });
    await store.createCase({ id: "real-pg-2", owner: "cli", input: { id: "real-pg-2", question: "Q?", images: [] }, options: {} });
    await store.close();
    const e = await rejection(startDemoService({ ...ENV, DATABASE_URL: url, MEDMMV_DATA_DIR: path.join(tmp(), "pg") }, { ...opts(), storeOptions: { pgSchema: schema } }));
    expect(e.code).toBe("CONFLICT");
    expect(e.message).toMatch(/^refusing to start the demo on the PostgreSQL store at DATABASE_URL: it holds 2 cases that the demo did not create/);
    expect(e.message).toMatch(/unset DATABASE_URL/);
    const after = await openStore({ databaseUrl: url, dataDir: tmp() }, { pgSchema: schema });
    expect((await after.getCase("real-pg-1"))?.status).toBe("queued");
    await after.close();
  });
});

describe("serve --demo runs the bundled cases", () => {
  let demo: RunningDemo;
  const dataDir = () => path.join(tmp(), "demo-run");
  const api = (p: string, init: RequestInit = {}) => fetch(demo.server.address + p, { ...init, headers: { authorization: `Bearer ${demo.apiKey}`, ...init.headers } });

  // A newcomer's shell may export their Azure resource and LangSmith tracing: the demo must
  // still answer from its scripted servers, and trace nothing.
  const USER_AZURE = { AZURE_OPENAI_API_KEY: "users-azure-key", AZURE_OPENAI_API_INSTANCE_NAME: "users-resource" };
  let tracingBefore: string | undefined;

  beforeAll(async () => {
    tracingBefore = process.env.LANGSMITH_TRACING;
    process.env.LANGSMITH_TRACING = "true";
    demo = await startDemoService({ ...ENV, ...USER_AZURE, MEDMMV_DATA_DIR: dataDir() }, opts());
  }, 120_000);
  afterAll(async () => {
    if (tracingBefore === undefined) delete process.env.LANGSMITH_TRACING;
    else process.env.LANGSMITH_TRACING = tracingBefore;
  });
  afterAll(async () => {
    await demo?.close();
  });

  it("prints the docs URL, the generated key and a signed audit-view link per case", async () => {
    expect(demo.server.address).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(demo.apiKey).toMatch(/^demo-[A-Za-z0-9_-]{32}$/);
    expect(demo.cases.map((c) => [c.slug, c.status])).toEqual([
      ["chest-pain", "completed"],
      ["community-pneumonia", "completed"],
      ["bone-marrow", "completed"],
    ]);
    const text = describeDemo(demo);
    expect(text).toContain(`${demo.server.address}/docs`);
    expect(text).toContain(demo.apiKey);
    for (const c of demo.cases) expect(text).toContain(c.viewUrl);
    expect((await fetch(`${demo.server.address}/docs/json`)).status).toBe(200);
    // The link opens the view with no key at all; the bare URL without it does not.
    const page = await fetch(demo.cases[0]!.viewUrl);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("medmmv-data");
    expect((await fetch(demo.cases[0]!.viewUrl.replace(/\?token=.*/, ""))).status).toBe(401);
  });

  it("ignores the user's Azure settings and turns LangChain's tracing off", () => {
    // Every case completed (checked above) on the scripted servers, not on users-resource.
    expect(demo.cases.every((c) => c.status === "completed")).toBe(true);
    expect(process.env.LANGSMITH_TRACING).toBeUndefined();
  });

  it("every result says scripted in provenance.models, and reads like the case", async () => {
    const results = await Promise.all(demo.cases.map(async (c) => DiagnosisResult.parse(((await (await api(`/cases/${c.caseId}`)).json()) as { result: unknown }).result)));
    for (const r of results) {
      expect(Object.values(r.provenance.models)).toEqual([DEMO_MODEL, DEMO_MODEL, DEMO_MODEL]);
      expect(r.provenance.evidenceChecks?.textDoctor.rejected).toEqual([]);
      expect(r.provenance.failures).toEqual([]);
      // Every claim of the selected path rests on nodes of its evidence graph.
      const g = EvidenceGraph.import(r.evidenceGraph);
      for (const claim of r.path!.steps.flatMap((s) => s.claims)) {
        expect(claim.verdict, claim.text).toBe("supported");
        for (const id of claim.evidence) expect(g.hasNode(id), `${claim.text} → ${id}`).toBe(true);
      }
    }
    const [chest, pneumonia, marrow] = results as [DiagnosisResult, DiagnosisResult, DiagnosisResult];
    expect(chest.answer).toEqual({ option: "B", text: "Inferior ST-elevation myocardial infarction" });
    expect(chest.path!.steps.map((s) => s.text).join(" ")).toMatch(/II, III and aVF.*reciprocal depression in aVL/);
    const repaired = chest.candidates.find((c) => c.initialAnswer === "A")!;
    expect(repaired).toMatchObject({ finalAnswer: "B", repairs: 1 });
    expect(repaired.hdReports[0]!.claims.find((c) => c.verdict === "contradicted")?.claim).toBe("The ST elevation is diffuse across the leads");
    expect(chest.hallucinations).toEqual([expect.objectContaining({ pathId: repaired.pathId, stage: "knowledge", resolved: true })]);
    expect(chest.provenance.evidenceChecks?.imageDoctor[0]?.flagged.map((f) => f.label)).toEqual(["ST-segment elevation on the rhythm strip"]);
    expect(new Set(chest.stability.rolloutAnswers)).toEqual(new Set(["A", "B", "C"]));

    expect(pneumonia.answer?.option).toBe("A");
    expect(pneumonia.hallucinations).toEqual([expect.objectContaining({ stage: "visual", resolved: true })]);
    expect(pneumonia.path!.steps[0]).toMatchObject({ stage: "visual", text: "The radiograph shows consolidation in the right lower zone." });

    // The pathway case: the rollout that jumped from low image quality to leukaemia was
    // caught by the pipeline's own pathway check, not by the scripted detector, and repaired.
    expect(marrow.answer).toEqual({ option: "A", text: "Acute myeloid leukaemia (AML)" });
    const jumped = marrow.candidates.find((c) => c.repairs > 0)!;
    expect(jumped).toMatchObject({ initialAnswer: "A", finalAnswer: "A", repairs: 1 });
    const [caught, accepted] = jumped.hdReports;
    expect(caught!.contextConflict).toMatchObject({ pathway: "bone-marrow", labels: { "image-quality": "low", diagnosis: "aml" } });
    expect(caught!.contextConflict!.steps).toEqual(expect.arrayContaining(["image-quality", "diagnosis"]));
    expect(caught!.claims.every((c) => c.verdict === "supported")).toBe(true);
    expect(accepted).toMatchObject({ hallucinationDetected: false });
    expect(accepted!.contextConflict).toBeUndefined();
    expect(marrow.hallucinations).toEqual([
      expect.objectContaining({ pathId: jumped.pathId, stage: "reasoning", severity: "HIGH", resolved: true, issue: expect.stringMatching(/^context-conflict: .*pathway "bone-marrow"/) }),
    ]);
    // Every refined path ends on a valid path of the pathway, the repaired one included.
    const pathway = loadPathway("bone-marrow");
    for (const c of marrow.candidates) {
      const final = c.hdReports.at(-1)!.path!;
      const output = { steps: final.steps.map((st) => ({ text: st.text, stage: st.stage, claims: st.claims.map((x) => x.text) })), answer: { option: c.finalAnswer, text: "Acute myeloid leukaemia (AML)" }, summary: final.summary };
      expect(findContextConflict(pathway, output), c.pathId).toBeNull();
    }
    expect(marrow.path!.steps.map((s) => s.text)).toEqual([
      "The aspirate smear is well spread and well stained, so the image is sufficient for analysis.",
      "The photographed field lies near the particles, so the region is adequate for counting cells.",
      "Large immature cells fill the field, which points to a malignancy of the marrow.",
      "The proliferating cells are myeloblasts, 62% of nucleated cells, several with Auer rods.",
      "A blast count above 20% with Auer rods establishes acute myeloid leukaemia.",
    ]);
    expect(marrow.provenance.evidenceChecks?.imageDoctor[0]?.flagged.map((f) => f.label)).toEqual(["Auer rods in the blast cytoplasm"]);
    expect(marrow.provenance.search?.enabled).toBe(true);
    expect(marrow.usage.searchCalls).toBeGreaterThan(0);
  });

  it("the pathway case carries a scripted conversation, printed and stored, that stays on a valid path", async () => {
    const marrow = demo.cases.find((c) => c.slug === "bone-marrow")!;
    const stored = (await (await api(`/cases/${marrow.caseId}/turns`)).json()) as { turns: Array<{ turn: number; question: string; step: string; category: string; contextConflict: boolean; evidence: unknown[] }> };
    expect(stored.turns.map((t) => [t.turn, t.question, t.step, t.category, t.contextConflict])).toEqual([
      [1, "Is the aspirate image of sufficient quality for analysis?", "image-quality", "high", false],
      [2, "Is the photographed region suitable for counting cells?", "cell-quality", "adequate", false],
      [3, "So what is the diagnosis?", "diagnosis", "aml", false],
    ]);
    // Each answer's claims were checked against the case's evidence graph.
    for (const t of stored.turns) expect(t.evidence.length, t.question).toBeGreaterThan(0);
    expect(marrow.turns.map((t) => t.turn)).toEqual([1, 2, 3]);
    const text = describeDemo(demo);
    expect(text).toContain("Turn 1: Is the aspirate image of sufficient quality for analysis?");
    expect(text).toContain("→ Acute myeloid leukaemia (AML): myeloblasts make up 62% of nucleated marrow cells, several with Auer rods.");
    expect(text).toContain("(diagnosis: aml; on a valid path)");
    // The other cases have no pathway and were asked nothing.
    expect(demo.cases.filter((c) => c.slug !== "bone-marrow").every((c) => c.turns.length === 0)).toBe(true);
  });

  it("a question no script answers gets a scripted reply that says so, not a model error", async () => {
    const chest = demo.cases.find((c) => c.slug === "chest-pain")!;
    const res = await api(`/cases/${chest.caseId}/turns`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ question: "Should we start heparin now?" }) });
    expect(res.status).toBe(201);
    const t = (await res.json()) as { turn: number; answer: string; step: string | null };
    expect(t).toMatchObject({ turn: 1, step: null });
    expect(t.answer).toMatch(/^The demo's scripted model has no answer written for this question/);
  });

  it("a case of the user's own is answered too, and says it is scripted", async () => {
    const res = await api("/diagnose", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ question: "What is the most likely diagnosis?", notes: "A 30-year-old woman with fever and a painful swollen knee for two days.", options: { A: "Septic arthritis", B: "Gout" } }),
    });
    expect(res.status).toBe(201);
    const r = DiagnosisResult.parse(await res.json());
    expect(r.status).toBe("completed");
    expect(Object.values(r.provenance.models)).toEqual([DEMO_MODEL, DEMO_MODEL, DEMO_MODEL]);
  });

  it("the event stream of a demo case replays to its final event", async () => {
    const res = await api(`/cases/${demo.cases[0]!.caseId}/events`, { headers: { accept: "text/event-stream" } });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    let text = "";
    while (!/event: final/.test(text)) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    await reader.cancel();
    expect(text).toMatch(/event: repair/);
    expect(text).toMatch(/event: final/);
  });

  it("a restart on the same store keeps the key and finds the cases instead of running them again", async () => {
    const first = demo.cases.map((c) => c.caseId);
    const key = demo.apiKey;
    await demo.close();
    demo = await startDemoService({ ...ENV, MEDMMV_DATA_DIR: dataDir() }, opts());
    expect(demo.apiKey).toBe(key);
    expect(demo.cases.map((c) => c.caseId)).toEqual(first);
    // The three demo cases and the user's own one: nothing was run twice.
    const listed = (await (await api("/cases?limit=100")).json()) as { items: unknown[] };
    expect(listed.items).toHaveLength(4);
    // Nor asked twice: the conversation is the one of the first start.
    const marrow = demo.cases.find((c) => c.slug === "bone-marrow")!;
    expect(marrow.turns.map((t) => t.turn)).toEqual([1, 2, 3]);
    expect(((await (await api(`/cases/${marrow.caseId}/turns`)).json()) as { turns: unknown[] }).turns).toHaveLength(3);
  }, 120_000);
});
