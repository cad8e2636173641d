// Uses app.inject: FHIR request/response shapes, export bundles and OperationOutcomes need no socket.
import type { Bundle, ClinicalImpression, Condition, OperationOutcome, Provenance } from "fhir/r4.js";
import { Fhir } from "fhir";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DiagnosisResult } from "../../../src/core/contracts/diagnosis-result.js";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import type { ScriptedRequest } from "../../../src/scripted/scripted-openai-server.js";
import { fixtureBundle } from "../../core/intake/fhir/fhir-fixtures.js";
import { chestPain, json } from "./http-harness.js";
import { startInjectServer, type InjectServer } from "./inject-harness.js";

/** TextDoctor quotes three facts of the STEMI record: a vital, a lab, and a line of the triage note. */
const QUOTES = ["Blood pressure 150/95 mmHg", "Troponin I 2.4 ng/mL", "Diaphoretic and nauseated on arrival"];
const base = clinicalScenario({ rolloutAnswers: ["B", "B", "B"] });
const scenario = {
  ...base,
  agents: {
    ...base.agents,
    "text-doctor": (req: ScriptedRequest) => ({
      entities: QUOTES.filter((q) => req.text.includes(q)).map((q, i) => ({ category: i === 0 ? "vital" : i === 1 ? "lab" : "symptom", label: q.toLowerCase(), detail: null, quote: q })),
    }),
  },
};

let t: InjectServer;
beforeAll(async () => {
  t = await startInjectServer({ scenario });
});
afterAll(() => t.close());

function postBundle(body: unknown, query = "", headers: Record<string, string> = {}) {
  return t.api(`/diagnose${query}`, { method: "POST", headers: { "content-type": "application/fhir+json", ...headers }, body: typeof body === "string" ? body : JSON.stringify(body) });
}

interface GraphNode {
  key: string;
  attributes: { label: string; sources: Array<{ agent: string; quote?: string; resource?: string }> };
}

describe("POST /diagnose with application/fhir+json", () => {
  let result: DiagnosisResult;

  beforeAll(async () => {
    const res = await postBundle(fixtureBundle("stemi"), `?option=${encodeURIComponent("A:Acute pericarditis")}&option=${encodeURIComponent("B:Inferior ST-elevation myocardial infarction")}`);
    expect(res.status).toBe(201);
    result = DiagnosisResult.parse(await res.json());
  });

  it("runs the case built from the bundle: question by default, options from the query, the notes summary in provenance", async () => {
    expect(result.status).toBe("completed");
    expect(result.answer).toEqual({ option: "B", text: "Inferior ST-elevation myocardial infarction" });
    expect(result.provenance.ignoredResources).toEqual([]);
    expect(result.provenance.fhirNotes).toMatchObject({ budget: 16_000, leftOut: {}, duplicates: {} });
    const view = await json<{ case: { question: string; notes: string; patient: unknown; images: Array<{ id: string; mimeType: string }> } }>(await t.api(`/cases/${result.caseId}`));
    expect(view.case.question).toBe("What is the most likely diagnosis?");
    expect(view.case.patient).toEqual({ age: 58, sex: "male" });
    expect(view.case.notes).toContain("[Observation/bp-1] Blood pressure 150/95 mmHg (2026-11-30)");
    expect(view.case.images).toEqual([expect.objectContaining({ id: "Media/ecg-strip", mimeType: "image/png" })]);
  });

  it("a TextDoctor quote leads back to the resource it was read from (source.resource)", async () => {
    const graph = await json<{ nodes: GraphNode[] }>(await t.api(`/cases/${result.caseId}/evidence-graph?scope=full`));
    const byQuote = (q: string) => graph.nodes.flatMap((n) => n.attributes.sources).find((s) => s.agent === "text-doctor" && s.quote === q);
    expect(byQuote("Blood pressure 150/95 mmHg")?.resource).toBe("Observation/bp-1");
    expect(byQuote("Troponin I 2.4 ng/mL")?.resource).toBe("Observation/trop-1");
    // A line of a document's text belongs to the DocumentReference it hangs under.
    expect(byQuote("Diaphoretic and nauseated on arrival")?.resource).toBe("DocumentReference/triage-note");
  });

  it("the question comes from ?question=", async () => {
    const res = await postBundle(fixtureBundle("dka"), `?question=${encodeURIComponent("What is the most appropriate next step in management?")}`, { prefer: "respond-async" });
    expect(res.status).toBe(202);
    const { caseId } = await json<{ caseId: string }>(res);
    const view = await json<{ case: { question: string } }>(await t.api(`/cases/${caseId}`));
    expect(view.case.question).toBe("What is the most appropriate next step in management?");
  });

  it("a JSON ClinicalCase never carries source.resource (no FHIR origin)", async () => {
    const res = await t.api("/diagnose", { method: "POST", json: chestPain({ notes: "[Observation/x] Troponin I 2.4 ng/mL" }) });
    const r = DiagnosisResult.parse(await res.json());
    const graph = await json<{ nodes: GraphNode[] }>(await t.api(`/cases/${r.caseId}/evidence-graph?scope=full`));
    expect(graph.nodes.flatMap((n) => n.attributes.sources).some((s) => s.resource !== undefined)).toBe(false);
  });

  it("no patient data from the bundle reaches the logs", () => {
    const logs = t.logs.text();
    expect(logs.length).toBeGreaterThan(0);
    for (const canary of ["150/95", "Troponin", "Diaphoretic", "Penicillin", "1968-05-14", "stemi-1"]) expect(logs).not.toContain(canary);
  });

  describe("GET /cases/{id}/fhir", () => {
    it("is a collection Bundle: a ClinicalImpression of the answer and its Provenance, valid R4", async () => {
      const res = await t.api(`/cases/${result.caseId}/fhir`);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toMatch(/^application\/fhir\+json/);
      const bundle = (await res.json()) as Bundle<ClinicalImpression | Provenance | Condition>;
      // FHIR.js validates against the R4 StructureDefinitions (cardinality, types, required value sets).
      const report = new Fhir().validate(bundle);
      expect(report.messages.filter((m) => m.severity === "error")).toEqual([]);
      expect(bundle.type).toBe("collection");
      const [ci, prov] = bundle.entry!.map((e) => e.resource!);
      if (ci?.resourceType !== "ClinicalImpression" || prov?.resourceType !== "Provenance") throw new Error("expected a ClinicalImpression then a Provenance");
      expect(ci.status).toBe("completed");
      expect(ci.subject).toEqual({ reference: "Patient/stemi-1" });
      expect(ci.summary).toBe("(B) Inferior ST-elevation myocardial infarction");
      expect(ci.note?.map((n) => n.text)).toContain(`answerSupport: ${result.answerSupport!.toFixed(3)} (share of the final paths' CU score behind this answer)`);
      // Findings: the selected path's supported evidence, pointing at the resources they were read from.
      const supported = new Set(result.path!.steps.flatMap((s) => s.claims.filter((c) => c.verdict === "supported").flatMap((c) => c.evidence)));
      expect(supported.size).toBeGreaterThan(0);
      expect(ci.finding?.length).toBeGreaterThan(0);
      for (const f of ci.finding!) expect(f.basis).toMatch(/evidence node f:/);
      const refs = ci.finding!.map((f) => f.itemReference?.reference).filter(Boolean);
      expect(refs.length).toBeGreaterThan(0);
      for (const r of refs) expect(["Observation/bp-1", "Observation/trop-1", "DocumentReference/triage-note"]).toContain(r);
      // Provenance: of the impression, when it was recorded, by which models, with which prompts.
      expect(prov.target).toEqual([{ reference: bundle.entry![0]!.fullUrl }]);
      expect(prov.recorded).toBe(result.provenance.finishedAt);
      expect(prov.agent.map((a) => a.who.display)).toEqual(expect.arrayContaining(Object.entries(result.provenance.models).map(([role, m]) => `${m} (${role})`)));
      const prompts = Object.fromEntries(prov.entity!.filter((e) => e.what.identifier?.system?.startsWith("urn:medmmv:prompt:")).map((e) => [e.what.identifier!.system!.slice("urn:medmmv:prompt:".length), e.what.identifier!.value]));
      expect(prompts).toEqual(result.provenance.prompts);
      expect(prov.entity!.find((e) => e.what.identifier?.system === "urn:medmmv:config")?.what.identifier?.value).toContain('"k":3');
      // The differential: the leading diagnosis provisional, with the runs behind it.
      const conditions = bundle.entry!.map((e) => e.resource!).filter((x): x is Condition => x.resourceType === "Condition");
      expect(conditions.length).toBe(result.differential!.length);
      expect(conditions[0]!.verificationStatus!.coding![0]!.code).toBe("provisional");
      expect(conditions[0]!.code!.text).toBe(result.differential![0]!.answer.text);
      expect(conditions[0]!.subject).toEqual({ reference: "Patient/stemi-1" });
      expect(conditions[0]!.note![0]!.text).toMatch(new RegExp(`^differential rank 1: ${result.differential![0]!.rollouts} of 3 runs`));
      for (const cond of conditions.slice(1)) expect(cond.verificationStatus!.coding![0]!.code).toBe("differential");
      // Exporting again gives the same bundle (stable ids).
      expect(await json(await t.api(`/cases/${result.caseId}/fhir`))).toEqual(bundle);
    });

    it("a JSON case exports too, its subject described rather than invented", async () => {
      const r = DiagnosisResult.parse(await (await t.api("/diagnose", { method: "POST", json: chestPain() })).json());
      const bundle = (await json(await t.api(`/cases/${r.caseId}/fhir`))) as Bundle<ClinicalImpression>;
      expect(new Fhir().validate(bundle).messages.filter((m) => m.severity === "error")).toEqual([]);
      expect(bundle.entry![0]!.resource!.subject.reference).toBeUndefined();
      expect(bundle.entry![0]!.resource!.subject.display).toContain(r.caseId);
    });

    it("errors are OperationOutcomes: unknown case 404, another key's case 404", async () => {
      const res = await t.api("/cases/case-nope/fhir");
      expect(res.status).toBe(404);
      expect(res.headers.get("content-type")).toMatch(/^application\/fhir\+json/);
      const oo = await json<OperationOutcome>(res);
      expect(oo.resourceType).toBe("OperationOutcome");
      expect(oo.issue[0]).toMatchObject({ severity: "error", code: "not-found" });
      const other = await t.api(`/cases/${result.caseId}/fhir`, { key: "test-key-bravo-9876543210abcdefghij" });
      expect(other.status).toBe(404);
    });
  });
});
