// Uses app.inject: FHIR request validation and OperationOutcome shapes need no socket.
import type { OperationOutcome } from "fhir/r4.js";
import { Fhir } from "fhir";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { smallPng } from "../../../src/scripted/image-bytes.js";
import { fixtureBundle } from "../../core/intake/fhir/fhir-fixtures.js";
import { json } from "./http-harness.js";
import { startInjectServer, type InjectServer } from "./inject-harness.js";

let t: InjectServer;
beforeAll(async () => {
  // A small read-resource cap, so "too many resources" needs no megabytes of bundle.
  t = await startInjectServer({ env: { MEDMMV_FHIR_MAX_RESOURCES: "40" } });
});
afterAll(() => t.close());

type B = ReturnType<typeof fixtureBundle>;
type R = Record<string, unknown>;
const res = (b: B, id: string): R => b.entry.find((e) => e.resource.id === id)!.resource;
const at = (b: B, id: string): number => b.entry.findIndex((e) => e.resource.id === id);
const b64 = (s: string | Buffer) => Buffer.from(s).toString("base64");

interface Malformed {
  name: string;
  /** The bundle to send: a fixture changed into a broken one, or any JSON value. */
  body: () => unknown;
  status: number;
  /** The FHIRPath the OperationOutcome must name (computed from the bundle sent). */
  expression: string | ((b: B) => string);
  code: string;
}

function stemi(change: (b: B) => void): () => B {
  return () => {
    const b = fixtureBundle("stemi");
    change(b);
    return b;
  };
}

const MALFORMED: Malformed[] = [
  { name: "a lone resource, not a Bundle", body: () => res(fixtureBundle("stemi"), "bp-1"), status: 400, expression: "Bundle.resourceType", code: "structure" },
  { name: "no resourceType", body: stemi((b) => delete (b as R).resourceType), status: 400, expression: "Bundle.resourceType", code: "structure" },
  { name: "a JSON array", body: () => [fixtureBundle("stemi")], status: 400, expression: "Bundle", code: "structure" },
  { name: "Bundle.type message", body: stemi((b) => ((b as R).type = "message")), status: 400, expression: "Bundle.type", code: "value" },
  { name: "Bundle.type missing", body: stemi((b) => delete (b as R).type), status: 400, expression: "Bundle.type", code: "required" },
  { name: "entry is an object", body: stemi((b) => ((b as R).entry = { resource: {} })), status: 400, expression: "Bundle.entry", code: "structure" },
  { name: "an entry whose resource is not an object", body: stemi((b) => b.entry.push({ fullUrl: "urn:uuid:1", resource: "Patient/1" } as never)), status: 400, expression: (b) => `Bundle.entry[${b.entry.length - 1}].resource`, code: "structure" },
  { name: "a resource without resourceType", body: stemi((b) => delete b.entry[1]!.resource.resourceType), status: 400, expression: "Bundle.entry[1].resource.resourceType", code: "required" },
  {
    name: "too many resources",
    body: stemi((b) => {
      const obs = res(b, "k-1");
      for (let i = 0; i < 40; i++) b.entry.push({ resource: { ...obs, id: `k-extra-${i}` } });
    }),
    status: 413,
    // Every entry of the STEMI record is of a type read: the 41st is the first past the cap.
    expression: "Bundle.entry[40].resource",
    code: "too-costly",
  },
  { name: "an R5 Bundle (Bundle.issues)", body: stemi((b) => ((b as R).issues = { resourceType: "OperationOutcome", issue: [] })), status: 400, expression: "Bundle.issues", code: "not-supported" },
  { name: "an R5 resource type", body: stemi((b) => b.entry.push({ resource: { resourceType: "ImagingSelection", id: "is-1", status: "available", code: { text: "x" } } })), status: 400, expression: (b) => `Bundle.entry[${b.entry.length - 1}].resource.resourceType`, code: "not-supported" },
  { name: "an STU3 resource type", body: stemi((b) => b.entry.push({ resource: { resourceType: "ProcedureRequest", id: "pr-1" } })), status: 400, expression: (b) => `Bundle.entry[${b.entry.length - 1}].resource.resourceType`, code: "not-supported" },
  { name: "STU3 MedicationStatement.taken", body: stemi((b) => (res(b, "ms-metformin").taken = "y")), status: 400, expression: (b) => `Bundle.entry[${at(b, "ms-metformin")}].resource.taken`, code: "not-supported" },
  { name: "R5 MedicationStatement.status recorded", body: stemi((b) => (res(b, "ms-metformin").status = "recorded")), status: 400, expression: (b) => `Bundle.entry[${at(b, "ms-metformin")}].resource.status`, code: "value" },
  { name: "Observation.status not in the value set", body: stemi((b) => (res(b, "bp-1").status = "done")), status: 400, expression: (b) => `Bundle.entry[${at(b, "bp-1")}].resource.status`, code: "value" },
  { name: "Observation without code", body: stemi((b) => delete res(b, "hr-1").code), status: 400, expression: (b) => `Bundle.entry[${at(b, "hr-1")}].resource.code`, code: "required" },
  { name: "a quantity value that is a string", body: stemi((b) => ((res(b, "trop-1").valueQuantity as R).value = "2.4")), status: 400, expression: (b) => `Bundle.entry[${at(b, "trop-1")}].resource.valueQuantity.value`, code: "structure" },
  { name: "a date that is not a FHIR dateTime", body: stemi((b) => (res(b, "k-1").effectiveDateTime = "30/11/2026")), status: 400, expression: (b) => `Bundle.entry[${at(b, "k-1")}].resource.effectiveDateTime`, code: "value" },
  { name: "Patient.gender M", body: stemi((b) => (b.entry[0]!.resource.gender = "M")), status: 400, expression: "Bundle.entry[0].resource.gender", code: "value" },
  { name: "Patient.birthDate implies an age over 150", body: stemi((b) => (b.entry[0]!.resource.birthDate = "1850-01-01")), status: 422, expression: "Bundle.entry[0].resource.birthDate", code: "invariant" },
  { name: "Patient.birthDate month 13", body: stemi((b) => (b.entry[0]!.resource.birthDate = "1968-13-01")), status: 400, expression: "Bundle.entry[0].resource.birthDate", code: "value" },
  { name: "Condition without subject", body: stemi((b) => delete res(b, "htn").subject), status: 400, expression: (b) => `Bundle.entry[${at(b, "htn")}].resource.subject`, code: "required" },
  { name: "AllergyIntolerance.criticality severe", body: stemi((b) => (res(b, "pcn").criticality = "severe")), status: 400, expression: (b) => `Bundle.entry[${at(b, "pcn")}].resource.criticality`, code: "value" },
  { name: "DocumentReference with no content", body: stemi((b) => (res(b, "triage-note").content = [])), status: 400, expression: (b) => `Bundle.entry[${at(b, "triage-note")}].resource.content`, code: "required" },
  { name: "the same resource twice", body: stemi((b) => b.entry.push({ resource: { ...res(b, "bp-1") } })), status: 400, expression: (b) => `Bundle.entry[${b.entry.length - 1}].resource.id`, code: "duplicate" },
  // (An odd id, a Media without data, a reference a document need not hold: degraded, not refused; test/core/intake/fhir/real-material.test.ts.)
  // Every entry of a document is about its subject; collections, searchsets and transactions may point outside.
  { name: "a subject reference to a Patient not in a document bundle", body: stemi((b) => ((b as R).type = "document", res(b, "bp-1").subject = { reference: "Patient/someone-else" })), status: 422, expression: (b) => `Bundle.entry[${at(b, "bp-1")}].resource.subject.reference`, code: "invariant" },
  {
    name: "a urn:uuid reference to nothing",
    body: () => {
      const b = fixtureBundle("dka");
      (b.entry[2]!.resource.subject as R).reference = "urn:uuid:0f3a1c2e-5b6d-4e7f-8a9b-999999999999";
      return b;
    },
    status: 422,
    expression: "Bundle.entry[2].resource.subject.reference",
    code: "not-found",
  },
  { name: "two Patients", body: stemi((b) => b.entry.push({ resource: { resourceType: "Patient", id: "other", gender: "female" } })), status: 422, expression: (b) => `Bundle.entry[${b.entry.length - 1}].resource`, code: "invariant" },
  { name: "a Binary that is not an image", body: stemi((b) => b.entry.push({ resource: { resourceType: "Binary", id: "bin-1", contentType: "image/png", data: b64("this is not a picture") } })), status: 415, expression: (b) => `Bundle.entry[${b.entry.length - 1}].resource.data`, code: "not-supported" },
  { name: "a Binary holding a PDF", body: stemi((b) => b.entry.push({ resource: { resourceType: "Binary", id: "bin-2", contentType: "application/pdf", data: b64("%PDF-1.7\n...") } })), status: 415, expression: (b) => `Bundle.entry[${b.entry.length - 1}].resource.data`, code: "not-supported" },
  { name: "Media data that is not base64", body: stemi((b) => ((res(b, "ecg-strip").content as R).data = "!!not base64!!")), status: 400, expression: (b) => `Bundle.entry[${at(b, "ecg-strip")}].resource.content.data`, code: "value" },
  { name: "Media pointing at a Binary not in a document bundle", body: stemi((b) => ((b as R).type = "document", res(b, "ecg-strip").content = { contentType: "image/png", url: "Binary/missing" })), status: 422, expression: (b) => `Bundle.entry[${at(b, "ecg-strip")}].resource.content.url`, code: "not-found" },
  { name: "Media pointing at an Observation", body: stemi((b) => (res(b, "ecg-strip").content = { contentType: "image/png", url: "Observation/bp-1" })), status: 422, expression: (b) => `Bundle.entry[${at(b, "ecg-strip")}].resource.content.url`, code: "invariant" },
  { name: "an image whose header is cut off", body: stemi((b) => ((res(b, "ecg-strip").content as R).data = b64(smallPng().subarray(0, 12)))), status: 400, expression: (b) => `Bundle.entry[${at(b, "ecg-strip")}].resource.content.data`, code: "value" },
  {
    name: "seventeen images",
    body: stemi((b) => {
      for (let i = 0; i < 16; i++) b.entry.push({ resource: { resourceType: "Media", id: `img-${i}`, status: "completed", content: { contentType: "image/png", data: b64(smallPng()) } } });
    }),
    status: 413,
    expression: (b) => `Bundle.entry[${b.entry.length - 1}].resource.content.data`,
    code: "too-costly",
  },
];

describe("malformed FHIR bundles → 4xx OperationOutcome naming the bad element", () => {
  it.each(MALFORMED)("$name → $status $code", async (m) => {
    const body = m.body();
    const r = await t.api("/diagnose", { method: "POST", headers: { "content-type": "application/fhir+json" }, body: JSON.stringify(body) });
    expect(r.status).toBe(m.status);
    expect(r.headers.get("content-type")).toMatch(/^application\/fhir\+json/);
    const oo = await json<OperationOutcome>(r);
    expect(oo.resourceType).toBe("OperationOutcome");
    expect(new Fhir().validate(oo).messages.filter((x) => x.severity === "error")).toEqual([]);
    const expression = typeof m.expression === "string" ? m.expression : m.expression(body as B);
    const issue = oo.issue.find((i) => i.expression?.includes(expression));
    expect(issue, `no issue names ${expression}: ${JSON.stringify(oo.issue)}`).toBeDefined();
    expect(issue).toMatchObject({ severity: "error", code: m.code });
    expect(issue!.diagnostics!.length).toBeGreaterThan(10);
  });

  it("refused bundles never reach a model", async () => {
    t.openai.reset();
    await t.api("/diagnose", { method: "POST", headers: { "content-type": "application/fhir+json" }, body: JSON.stringify(MALFORMED[14]!.body()) });
    expect(t.openai.stats().total).toBe(0);
  });

  it("broken JSON, a non-R4 fhirVersion, and a missing key are OperationOutcomes too", async () => {
    const broken = await t.api("/diagnose", { method: "POST", headers: { "content-type": "application/fhir+json" }, body: '{"resourceType": "Bundle",' });
    expect(broken.status).toBe(400);
    expect((await json<OperationOutcome>(broken)).issue[0]).toMatchObject({ severity: "error", code: "invalid" });
    const stu3 = await t.api("/diagnose", { method: "POST", headers: { "content-type": "application/fhir+json; fhirVersion=3.0" }, body: JSON.stringify(fixtureBundle("stemi")) });
    expect(stu3.status).toBe(415);
    expect((await json<OperationOutcome>(stu3)).issue[0]).toMatchObject({ code: "not-supported" });
    const anon = await t.api("/diagnose", { method: "POST", key: null, headers: { "content-type": "application/fhir+json" }, body: JSON.stringify(fixtureBundle("stemi")) });
    expect(anon.status).toBe(401);
    expect((await json<OperationOutcome>(anon)).issue[0]).toMatchObject({ code: "login" });
    const badOption = await t.api("/diagnose?option=pericarditis", { method: "POST", headers: { "content-type": "application/fhir+json" }, body: JSON.stringify(fixtureBundle("stemi")) });
    expect(badOption.status).toBe(400);
    expect((await json<OperationOutcome>(badOption)).issue[0]).toMatchObject({ code: "value", expression: ["option[0]"] });
  });

  it("every other client still gets the JSON error", async () => {
    const r = await t.api("/diagnose", { method: "POST", json: { notes: "no question" } });
    expect(r.status).toBe(400);
    expect(r.headers.get("content-type")).toMatch(/^application\/json/);
    const body = await json<{ code: string; issues: unknown[] }>(r);
    expect(body.code).toBe("INVALID_INPUT");
    expect(body.issues.length).toBeGreaterThan(0);
  });
});
