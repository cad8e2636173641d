// Uses app.inject: POST /diagnose, case listing/fetch/delete and their status codes need no socket.
import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DiagnosisResult } from "../../../src/core/contracts/diagnosis-result.js";
import { chestPain, json, until } from "./http-harness.js";
import { startInjectServer, type InjectServer } from "./inject-harness.js";
import { pngWithCanvas } from "../../../src/scripted/image-bytes.js";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";

let t: InjectServer;
beforeAll(async () => {
  t = await startInjectServer();
});
afterAll(() => t.close());

interface CaseViewBody {
  caseId: string;
  status: string;
  progress: { step: string; done: number; total: number } | null;
  case: Record<string, unknown> & { images: Array<Record<string, unknown>> };
  result: DiagnosisResult | null;
  error: unknown;
  createdAt: string;
  updatedAt: string;
}

/** The workflow checkpoints of a finished case are dropped (soon after its final event). */
async function checkpointsPruned(id: string): Promise<void> {
  await until(async () => ((await t.server.store.checkpointer().getTuple({ configurable: { thread_id: id } })) === undefined ? true : undefined), 5_000, `checkpoints of ${id} pruned`);
  const left = [];
  for await (const c of t.server.store.checkpointer().list({ configurable: { thread_id: id } })) left.push(c);
  expect(left).toEqual([]);
}

async function waitFinished(id: string): Promise<CaseViewBody> {
  return until(async () => {
    const v = await json<CaseViewBody>(await t.api(`/cases/${id}`));
    return ["completed", "abstained", "failed"].includes(v.status) ? v : undefined;
  }, 15_000, `case ${id}`);
}

describe("POST /diagnose", () => {
  it("waits by default: 201, Location, and a DiagnosisResult whose caseId is the case's id", async () => {
    const res = await t.api("/diagnose", { method: "POST", json: chestPain() });
    expect(res.status).toBe(201);
    const result = DiagnosisResult.parse(await res.json());
    expect(res.headers.get("location")).toBe(`/cases/${result.caseId}`);
    expect(result.status).toBe("completed");
    expect(result.answer?.option).toBe("B");
    expect(result.provenance.config.k).toBe(3);
    // security headers and the request id
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("content-security-policy")).toContain("default-src 'self'");
    expect(res.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    // A finished case keeps its result and events, not its workflow checkpoints.
    await checkpointsPruned(result.caseId);
  });

  it("with Prefer: respond-async answers 202 at once; the case is then fetchable until done", async () => {
    const res = await t.api("/diagnose", { method: "POST", json: chestPain({ id: "client-17" }), headers: { prefer: "respond-async" } });
    expect(res.status).toBe(202);
    expect(res.headers.get("preference-applied")).toBe("respond-async");
    const body = await json<{ caseId: string; status: string; location: string; events: string }>(res);
    expect(["queued", "running"]).toContain(body.status);
    expect(res.headers.get("location")).toBe(`/cases/${body.caseId}`);
    expect(body.location).toBe(`/cases/${body.caseId}`);
    expect(body.events).toBe(`/cases/${body.caseId}/events`);
    // the server chooses case ids; the client's id is kept in the metadata
    expect(body.caseId).not.toBe("client-17");
    const view = await waitFinished(body.caseId);
    expect(view.status).toBe("completed");
    expect(view.progress).toEqual({ step: "done", done: 1, total: 1 });
    expect(view.case.question).toBe("What is the most likely diagnosis?");
    expect(view.case.metadata).toEqual({ clientId: "client-17" });
    expect(DiagnosisResult.parse(view.result).caseId).toBe(body.caseId);
    expect(view.error).toBeNull();
  });

  it("honours ?k and ?maxRepairs", async () => {
    t.openai.reset();
    const res = await t.api("/diagnose?k=2&maxRepairs=0", { method: "POST", json: chestPain() });
    expect(res.status).toBe(201);
    const result = DiagnosisResult.parse(await res.json());
    expect(result.provenance.config).toMatchObject({ k: 2, maxRepairs: 0 });
    expect(t.openai.stats().byAgent.rollout).toBe(2);
  });

  it("honours ?adaptive: an agreeing first round stops at 3 rollouts, a disagreeing one goes on to k", async () => {
    const diagnose = async (query: string) => {
      t.openai.reset();
      const result = DiagnosisResult.parse(await (await t.api(`/diagnose?${query}`, { method: "POST", json: chestPain() })).json());
      return { result, rollouts: t.openai.stats().byAgent.rollout };
    };
    t.openai.setScenario(clinicalScenario({ rolloutAnswers: ["B"] }));
    try {
      const adaptive = await diagnose("k=5&adaptive=true");
      expect(adaptive.result.provenance.config).toMatchObject({ k: 5, adaptive: true });
      expect(adaptive.rollouts).toBe(3);
      const full = await diagnose("k=5&adaptive=false");
      expect(full.result.provenance.config).toMatchObject({ k: 5, adaptive: false });
      expect(full.rollouts).toBe(5);
      expect(adaptive.result.answer).toEqual(full.result.answer);
    } finally {
      t.openai.setScenario(clinicalScenario({ rolloutAnswers: ["B", "B", "A"] }));
    }
    // This server's default scenario disagrees in the first round (B, B, A): all k run.
    expect((await diagnose("k=5&adaptive=true")).rollouts).toBe(5);
  });

  it("honours ?composeReply on an open-ended question: the result carries the verified reply", async () => {
    const { options: _options, ...open } = chestPain();
    t.openai.setScenario(clinicalScenario({ rolloutAnswers: ["Inferior STEMI"] }));
    try {
      const res = await t.api("/diagnose?k=2&composeReply=true", { method: "POST", json: open });
      expect(res.status).toBe(201);
      const result = DiagnosisResult.parse(await res.json());
      expect(result.reply!.text).toMatch(/^The most likely answer is Inferior STEMI\./);
      expect(result.reply!.removedClaims).toBe(0);
      expect(result.differential![0]).toMatchObject({ answer: { text: "Inferior STEMI" }, rollouts: 2, of: 2 });
    } finally {
      t.openai.setScenario(clinicalScenario({ rolloutAnswers: ["B", "B", "A"] }));
    }
    const bad = await t.api("/diagnose?composeReply=yes", { method: "POST", json: chestPain() });
    expect(bad.status).toBe(400);
  });

  it("refuses a malformed ?adaptive with a 400 that says what to send", async () => {
    const res = await t.api("/diagnose?adaptive=yes", { method: "POST", json: chestPain() });
    expect(res.status).toBe(400);
    expect(JSON.stringify(await res.json())).toContain('adaptive must be \\"true\\" or \\"false\\"');
  });

  it("takes multipart/form-data: a `case` JSON field plus image files named by image id", async () => {
    t.openai.reset();
    const png = pngWithCanvas(64, 48);
    const form = new FormData();
    form.set("case", JSON.stringify(chestPain({ images: [{ id: "ecg", caption: "12-lead ECG" } as never] })));
    form.set("ecg", new Blob([new Uint8Array(png)], { type: "application/octet-stream" }), "ecg.bin");
    form.set("extra", new Blob([new Uint8Array(pngWithCanvas(8, 8))]), "extra.png");
    const res = await t.api("/diagnose", { method: "POST", body: form });
    expect(res.status).toBe(201);
    const result = DiagnosisResult.parse(await res.json());
    const view = await json<CaseViewBody>(await t.api(`/cases/${result.caseId}`));
    expect(view.case.images).toEqual([
      expect.objectContaining({ id: "ecg", mimeType: "image/png", caption: "12-lead ECG", sha256: expect.stringMatching(/^[0-9a-f]{64}$/) }),
      expect.objectContaining({ id: "extra", mimeType: "image/png" }),
    ]);
    // the images reached the vision model
    const vision = t.openai.stats().log.filter((c) => c.agent === "image-doctor");
    expect(vision.length).toBeGreaterThan(0);
    expect(vision[0]!.images).toBe(2);
  });
});

describe("a case that fails", () => {
  it("is stored as failed with its error; the path graph is absent but the full graph is kept", async () => {
    t.openai.addFault({ kind: "status", status: 400, agent: "rollout" });
    try {
      const res = await t.api("/diagnose", { method: "POST", json: chestPain() });
      expect(res.status).toBe(201);
      const result = DiagnosisResult.parse(await res.json());
      expect(result.status).toBe("failed");
      expect(result.error?.code).toBe("PIPELINE_FAILED");
      const view = await json<CaseViewBody>(await t.api(`/cases/${result.caseId}`));
      expect(view.status).toBe("failed");
      expect(view.error).toMatchObject({ code: "PIPELINE_FAILED" });
      const path = await t.api(`/cases/${result.caseId}/evidence-graph`);
      expect(path.status).toBe(404);
      expect((await json<{ message: string }>(path)).message).toMatch(/has no selected path \(status failed\)/);
      expect((await t.api(`/cases/${result.caseId}/evidence-graph?scope=full`)).status).toBe(200);
      const events = await t.server.store.listEvents(result.caseId);
      expect(events.filter((e) => e.type === "branch-failed")).toHaveLength(3);
      expect(events.at(-1)).toMatchObject({ type: "final", data: { status: "failed" } });
      await checkpointsPruned(result.caseId);
    } finally {
      t.openai.clearFaults();
    }
  });
});

describe("the README's examples", () => {
  it("uploads the example CLI case file and its image as multipart, as the curl example does", async () => {
    const dir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../examples");
    const form = new FormData();
    form.set("case", await readFile(path.join(dir, "chest-pain.json"), "utf8"));
    form.set("img1", new Blob([new Uint8Array(await readFile(path.join(dir, "synthetic-ecg-strip.png")))]), "synthetic-ecg-strip.png");
    const res = await t.api("/diagnose", { method: "POST", body: form });
    expect(res.status).toBe(201);
    const result = DiagnosisResult.parse(await res.json());
    const view = await json<CaseViewBody>(await t.api(`/cases/${result.caseId}`));
    expect(view.case.images).toEqual([expect.objectContaining({ id: "img1", mimeType: "image/png", caption: expect.stringContaining("Synthetic") })]);
    expect(view.case.images[0]).not.toHaveProperty("path");
    expect(view.case.metadata).toMatchObject({ clientId: "demo-chest-pain" });
  });
});

describe("GET /cases and /cases/{id}", () => {
  it("lists the caller's cases newest first, in pages", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await t.api("/diagnose", { method: "POST", json: chestPain(), headers: { prefer: "respond-async" } });
      ids.push((await json<{ caseId: string }>(r)).caseId);
    }
    for (const id of ids) await waitFinished(id);
    const p1 = await json<{ items: { caseId: string; status: string; answer: unknown }[]; nextCursor: string | null }>(await t.api("/cases?limit=2"));
    expect(p1.items.map((i) => i.caseId)).toEqual([ids[2], ids[1]]);
    expect(p1.items[0]).toMatchObject({ status: "completed", answer: { option: "B" } });
    expect(p1.nextCursor).toBeTruthy();
    const p2 = await json<{ items: { caseId: string }[] }>(await t.api(`/cases?limit=2&cursor=${encodeURIComponent(p1.nextCursor!)}`));
    expect(p2.items[0]!.caseId).toBe(ids[0]);
    const completed = await json<{ items: { status: string }[] }>(await t.api("/cases?status=completed&limit=100"));
    expect(completed.items.length).toBeGreaterThanOrEqual(3);
    expect(completed.items.every((i) => i.status === "completed")).toBe(true);
    expect((await t.api("/cases?status=weird")).status).toBe(400);
    expect((await t.api("/cases?cursor=not-a-cursor")).status).toBe(400);
  });
});

describe("GET /cases/{id}/evidence-graph", () => {
  it("returns the selected path's subgraph or the full graph, as graphology or Cytoscape JSON", async () => {
    const result = DiagnosisResult.parse(await (await t.api("/diagnose", { method: "POST", json: chestPain() })).json());
    const base = `/cases/${result.caseId}/evidence-graph`;
    const path = await json<{ nodes: { key: string }[]; edges: unknown[]; options: { type: string } }>(await t.api(base));
    expect(path).toEqual(result.evidenceGraph);
    expect(path.nodes.length).toBeGreaterThan(0);
    const full = await json<{ nodes: { key: string }[] }>(await t.api(`${base}?scope=full`));
    expect(full.nodes.length).toBeGreaterThanOrEqual(path.nodes.length);
    const fullKeys = new Set(full.nodes.map((n) => n.key));
    expect(path.nodes.every((n) => fullKeys.has(n.key))).toBe(true);
    const cy = await json<{ elements: { nodes: { data: { id: string } }[]; edges: unknown[] } }>(await t.api(`${base}?scope=full&format=cytoscape`));
    expect(cy.elements.nodes.map((n) => n.data.id).sort()).toEqual([...fullKeys].sort());
    const bad = await t.api(`${base}?scope=everything`);
    expect(bad.status).toBe(400);
    expect((await json<{ message: string }>(bad)).message).toContain("query.scope");
  });

  it("answers 409 while the case is still running", async () => {
    t.openai.setLatency(2_000);
    try {
      const r = await t.api("/diagnose", { method: "POST", json: chestPain(), headers: { prefer: "respond-async" } });
      const { caseId } = await json<{ caseId: string }>(r);
      const res = await t.api(`/cases/${caseId}/evidence-graph`);
      expect(res.status).toBe(409);
      expect((await json<{ message: string }>(res)).message).toMatch(/is (queued|running); its evidence graph is available once it finishes/);
      expect((await t.api(`/cases/${caseId}`, { method: "DELETE" })).status).toBe(204);
    } finally {
      t.openai.setLatency(0);
    }
  });
});

describe("DELETE /cases/{id}", () => {
  it("purges a finished case with its images and events (its checkpoints went when it finished); a second DELETE is 404", async () => {
    const image = pngWithCanvas(123, 45); // unique to this case
    const res = await t.api("/diagnose", { method: "POST", json: chestPain({ images: [{ id: "only-here", data: image.toString("base64") }] }) });
    const result = DiagnosisResult.parse(await res.json());
    const view = await json<CaseViewBody>(await t.api(`/cases/${result.caseId}`));
    const sha = view.case.images[0]!.sha256 as string;
    const thread = { configurable: { thread_id: result.caseId } };
    expect(await t.server.store.getImage(sha)).not.toBeNull();
    await checkpointsPruned(result.caseId);

    const del = await t.api(`/cases/${result.caseId}`, { method: "DELETE" });
    expect(del.status).toBe(204);
    expect(await del.text()).toBe("");
    expect((await t.api(`/cases/${result.caseId}`)).status).toBe(404);
    expect((await t.api(`/cases/${result.caseId}/events`)).status).toBe(404);
    expect(await t.server.store.listEvents(result.caseId)).toEqual([]);
    expect(await t.server.store.getImage(sha)).toBeNull();
    expect(await t.server.store.checkpointer().getTuple(thread)).toBeUndefined();
    expect((await t.api(`/cases/${result.caseId}`, { method: "DELETE" })).status).toBe(404);
  });
});

describe("probes and docs", () => {
  it("/healthz and /readyz need no key", async () => {
    const h = await t.api("/healthz", { key: null });
    expect(h.status).toBe(200);
    expect(await h.json()).toEqual({ status: "ok", version: expect.any(String) });
    const r = await t.api("/readyz", { key: null });
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ status: "ready", checks: { store: "ok", model: "ok", accepting: true } });
  });

  it("serves the OpenAPI document generated from the route schemas, and the UI at /docs", async () => {
    const doc = await json<{ openapi: string; paths: Record<string, Record<string, { requestBody?: { content: Record<string, unknown> }; parameters?: { name: string }[] }>> }>(await t.api("/docs/json", { key: null }));
    expect(doc.openapi).toBe("3.1.0");
    expect(Object.keys(doc.paths).sort()).toEqual([
      "/audit",
      "/audit-events",
      "/audit-links",
      "/audit/cases/{id}",
      "/audit/trail",
      "/audit/trail.csv",
      "/audit/trail.ndjson",
      "/cases",
      "/cases/{id}",
      "/cases/{id}/audit-events",
      "/cases/{id}/events",
      "/cases/{id}/evidence-graph",
      "/cases/{id}/fhir",
      "/cases/{id}/turns",
      "/cases/{id}/view",
      "/cases/{id}/view-links",
      "/cases/{id}/view/events",
      "/cases/{id}/view/evidence-graph",
      "/cases/{id}/view/fhir",
      "/cases/{id}/view/payload",
      "/cds-services",
      "/cds-services/medmmv-diagnosis",
      "/cds-services/medmmv-diagnosis/feedback",
      "/diagnose",
      "/healthz",
      "/readyz",
    ]);
    const post = doc.paths["/diagnose"]!.post!;
    expect(Object.keys(post.requestBody!.content).sort()).toEqual(["application/fhir+json", "application/json", "multipart/form-data"]);
    expect(JSON.stringify(post.requestBody!.content["application/json"])).toContain("question");
    expect(post.parameters!.map((p) => p.name)).toEqual(expect.arrayContaining(["k", "maxRepairs", "adaptive", "idempotency-key", "prefer"]));
    const ui = await t.api("/docs", { key: null, redirect: "follow" });
    expect(ui.status).toBe(200);
    expect(await ui.text()).toContain("swagger");
  });
});
