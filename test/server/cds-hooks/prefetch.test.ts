// app.inject: what the hook answers and what the case it starts holds need no socket.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import { ageAt } from "../../../src/core/intake/fhir/renderers.js";
import { fhirOrigin } from "../../../src/core/contracts/fhir-origin.js";
import { until } from "../../support/until.js";
import { startInjectServer, type InjectServer } from "../http/inject-harness.js";
import { stemiPrefetch } from "./stemi-prefetch.js";

const SERVICE = "/cds-services/medmmv-diagnosis";
let t: InjectServer;
let refusing: InjectServer;
beforeAll(async () => {
  t = await startInjectServer({ scenario: clinicalScenario({ rolloutAnswers: ["Inferior ST-elevation myocardial infarction"] }) });
  refusing = await startInjectServer({ env: { MEDMMV_CDS_EMPTY_RECORD: "422" } });
});
afterAll(async () => {
  await t.close();
  await refusing.close();
});

interface Card {
  summary: string;
  indicator: string;
  detail?: string;
  links?: Array<{ url: string }>;
}

async function hook(server: InjectServer, prefetch: Record<string, unknown>): Promise<{ status: number; body: { cards?: Card[]; message?: string } }> {
  const res = await server.api(SERVICE, { method: "POST", json: { hook: "patient-view", hookInstance: randomUUID(), context: { userId: "Practitioner/dr-1", patientId: "stemi-1" }, prefetch } });
  return { status: res.status, body: (await res.json()) as { cards?: Card[]; message?: string } };
}

/** The case a card links to, once its input is stored. */
async function caseOf(card: Card) {
  const id = decodeURIComponent(new URL(card.links![0]!.url).pathname.split("/")[2]!);
  return until(async () => (await t.store.getCase(id)) ?? undefined, 20_000, `case ${id}`);
}

/** The STEMI prefetch with every clinical date moved years back: the last clinical date is not today. */
function oldPrefetch(): Record<string, unknown> {
  const p = stemiPrefetch();
  return JSON.parse(JSON.stringify(p).replace(/"2026-11-/g, '"2019-03-')) as Record<string, unknown>;
}

const OUTCOME = { resourceType: "OperationOutcome", issue: [{ severity: "error", code: "timeout", diagnostics: "Observation search timed out" }] };

describe("CDS Hooks prefetch: what was not read is said", () => {
  it("a prefetch key answered with an OperationOutcome: the card says labs were not read, and so does the case's provenance", async () => {
    const { status, body } = await hook(t, { ...stemiPrefetch(), observations: OUTCOME });
    expect(status).toBe(200);
    const card = body.cards![0]!;
    expect(card.indicator).toBe("warning");
    expect(card.summary).toMatch(/part of it could not be read/);
    expect(card.detail).toContain('**Not read:** observations — labs and vital signs (the EHR answered with an OperationOutcome (timeout: "Observation search timed out"))');
    const record = await caseOf(card);
    expect(fhirOrigin(record.input)!.ignoredResources[0]).toEqual({ resource: "prefetch.observations", reason: 'not read: the EHR answered with an OperationOutcome (timeout: "Observation search timed out")' });
    expect(record.input.notes).not.toContain("Troponin");
  });

  it("another patient's Condition in the conditions prefetch is in no note and the card says it was not read", async () => {
    const p = stemiPrefetch() as { conditions: { entry: unknown[] } };
    p.conditions.entry.push({ resource: { resourceType: "Condition", id: "c-9279171", clinicalStatus: { coding: [{ code: "active" }] }, code: { text: "Metastatic pancreatic carcinoma" }, subject: { reference: "Patient/9279171" } } });
    const { status, body } = await hook(t, p);
    expect(status).toBe(200);
    const card = body.cards![0]!;
    expect(card.detail).toContain("**Not read:** 1 condition of another patient.");
    expect(JSON.stringify(card)).not.toContain("9279171");
    const record = await caseOf(card);
    expect(JSON.stringify(record.input)).not.toContain("pancreatic");
    // Named by type and position: its id (c-9279171) holds the other patient's.
    expect(fhirOrigin(record.input)!.ignoredResources.some((i) => /^Condition \(/.test(i.resource) && /another patient/.test(i.reason))).toBe(true);
    expect(JSON.stringify(fhirOrigin(record.input))).not.toContain("9279171");
  });

  it("a searchset holding only a failed search's OperationOutcome is not read either, and said", async () => {
    const { body } = await hook(t, { ...stemiPrefetch(), allergies: { resourceType: "Bundle", type: "searchset", entry: [{ resource: { ...OUTCOME, issue: [{ severity: "fatal", code: "exception" }] }, search: { mode: "outcome" } }] } });
    expect(body.cards![0]!.detail).toContain("**Not read:** allergies — allergies and intolerances (the EHR answered with an OperationOutcome (exception))");
  });

  it("the patient's age is their age at the call, not at the record's last clinical date", async () => {
    const p = oldPrefetch();
    const birth = (p.patient as { birthDate: string }).birthDate;
    const { body } = await hook(t, { ...p, observations: OUTCOME });
    const record = await caseOf(body.cards![0]!);
    const today = ageAt(birth, new Date().toISOString())!.years;
    expect(record.input.patient?.age).toBe(today);
    expect(today).not.toBe(ageAt(birth, "2019-03-30")!.years);
  });
});

describe("CDS Hooks patient-view with nothing to analyse", () => {
  const empty = () => Object.fromEntries(Object.keys(stemiPrefetch()).map((k) => [k, { resourceType: "Bundle", type: "searchset", entry: [] }]));

  it.each([
    ["every key an empty search", empty],
    ["a null Patient and empty searches", () => ({ ...empty(), patient: null })],
    ["the Patient alone", () => ({ ...empty(), patient: stemiPrefetch().patient })],
  ])("%s → {\"cards\": []}, the reason in the server log", async (_name, p) => {
    const before = t.logs.text().length;
    const { status, body } = await hook(t, p());
    expect(status).toBe(200);
    expect(body).toEqual({ cards: [] });
    expect(t.logs.text().slice(before)).toContain("patient-view: nothing to analyse, answered with no cards");
  });

  it("…or 422 saying why, with MEDMMV_CDS_EMPTY_RECORD=422", async () => {
    const { status, body } = await hook(refusing, empty());
    expect(status).toBe(422);
    expect(body.message).toMatch(/none of the patient's record/);
  });
});
