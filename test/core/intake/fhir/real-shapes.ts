/**
 * SYNTHETIC bundles (no real person) in the shapes of public FHIR material nobody on the
 * project wrote: HL7's R4 searchset example (`Bundle-bundle-example`: MedicationRequests of
 * `Patient/347` with the Medication `_include`d, the Patient absent), a server's answer to
 * `Observation?patient=…` (Encounter and Patient not in it), a server's "no match" searchset
 * holding only an OperationOutcome, an IPS-style document with a Composition narrative, a
 * transaction with DELETE and GET entries, and Synthea's STU3 and DSTU2 outputs.
 */
import { SYNTHETIC_TAG, type Json } from "./synthea-shaped.js";

const LOINC = "http://loinc.org";
const meta = { tag: [SYNTHETIC_TAG] };

/** After HL7's `Bundle-bundle-example`: a searchset of MedicationRequests, the Medication included, no Patient. */
export function hl7SearchsetExample(): Json {
  return {
    resourceType: "Bundle",
    id: "synthetic-bundle-example",
    meta: { ...meta, lastUpdated: "2014-08-18T01:43:30Z" },
    type: "searchset",
    total: 3,
    link: [{ relation: "self", url: "https://example.com/base/MedicationRequest?patient=347&_include=MedicationRequest.medication&_count=2" }],
    entry: [
      {
        fullUrl: "https://example.com/base/MedicationRequest/3123",
        resource: { resourceType: "MedicationRequest", id: "3123", text: { status: "generated", div: "<div xmlns=\"http://www.w3.org/1999/xhtml\"><p>a synthetic prescription</p></div>" }, status: "unknown", intent: "order", medicationReference: { reference: "Medication/example" }, subject: { reference: "Patient/347" } },
        search: { mode: "match", score: 1 },
      },
      { fullUrl: "https://example.com/base/Medication/example", resource: { resourceType: "Medication", id: "example", code: { text: "Amoxicillin 250 mg capsule" } }, search: { mode: "include" } },
      {
        fullUrl: "https://example.com/base/MedicationRequest/3124",
        resource: { resourceType: "MedicationRequest", id: "3124", status: "active", intent: "order", medicationReference: { reference: "Medication/unknown", display: "Ibuprofen 400 mg" }, subject: { reference: "Patient/347" }, requester: { reference: "Practitioner/f007" } },
        search: { mode: "match", score: 1 },
      },
      { resource: { resourceType: "OperationOutcome", issue: [{ severity: "information", code: "informational", diagnostics: "1 included resource" }] }, search: { mode: "outcome" } },
    ],
  };
}

/** A server's `Observation?patient=…` answer: results that reference an Encounter, a Specimen and a Patient it does not hold. */
export function observationSearchset(): Json {
  const obs = (id: string, loinc: string, display: string, value: number, unit: string, when: string) => ({
    fullUrl: `https://fhir.example.org/r4/Observation/${id}`,
    resource: {
      resourceType: "Observation",
      id,
      meta,
      status: "final",
      category: [{ coding: [{ system: "http://terminology.hl7.org/CodeSystem/observation-category", code: "laboratory" }] }],
      code: { coding: [{ system: LOINC, code: loinc, display }] },
      subject: { reference: "Patient/pat2" },
      encounter: { reference: "Encounter/enc-77" },
      specimen: { reference: "Specimen/spec-1" },
      performer: [{ reference: "Organization/1832473e-2fe0-452d-abe9-3cdb9879522f", display: "Acme Laboratory" }],
      effectiveDateTime: when,
      valueQuantity: { value, unit, system: "http://unitsofmeasure.org", code: unit },
    },
    search: { mode: "match" },
  });
  return {
    resourceType: "Bundle",
    id: "synthetic-observation-search",
    meta,
    type: "searchset",
    total: 3,
    entry: [obs("chol-1", "2093-3", "Cholesterol [Mass/volume] in Serum or Plasma", 6.3, "mmol/L", "2026-10-01"), obs("chol-2", "2093-3", "Cholesterol [Mass/volume] in Serum or Plasma", 5.9, "mmol/L", "2026-11-01"), obs("hdl-1", "2085-9", "HDL Cholesterol", 1.3, "mmol/L", "2026-11-01")],
  };
}

/** A server's answer when nothing matched: a searchset of one OperationOutcome. */
export function operationOutcomeOnly(): Json {
  return {
    resourceType: "Bundle",
    id: "synthetic-no-match",
    meta,
    type: "searchset",
    total: 0,
    entry: [{ resource: { resourceType: "OperationOutcome", issue: [{ severity: "warning", code: "not-found", diagnostics: "No matching patient" }] }, search: { mode: "outcome" } }],
  };
}

/** A document bundle: the Composition's narrative names the patient; its sections reference entries. */
export function documentBundle(): Json {
  return {
    resourceType: "Bundle",
    id: "synthetic-document",
    meta,
    identifier: { system: "urn:ietf:rfc:3986", value: "urn:uuid:0c3151bd-1cbf-4d64-b04d-cd9187a4c6e0" },
    type: "document",
    timestamp: "2026-11-20T09:00:00Z",
    entry: [
      {
        fullUrl: "urn:uuid:7f9d6b1a-0000-4000-8000-000000000001",
        resource: {
          resourceType: "Composition",
          id: "7f9d6b1a-0000-4000-8000-000000000001",
          status: "final",
          type: { coding: [{ system: LOINC, code: "18842-5", display: "Discharge summary" }] },
          subject: { reference: "urn:uuid:7f9d6b1a-0000-4000-8000-000000000002" },
          date: "2026-11-20T09:00:00Z",
          author: [{ reference: "urn:uuid:7f9d6b1a-0000-4000-8000-000000000004" }],
          title: "Discharge summary",
          section: [
            {
              title: "Hospital course",
              code: { coding: [{ system: LOINC, code: "8648-8" }] },
              text: { status: "generated", div: "<div xmlns=\"http://www.w3.org/1999/xhtml\"><p>Mrs. <b>Carla77 Ramírez</b> was admitted with community-acquired pneumonia.</p><p>Improved on ceftriaxone.</p></div>" },
              entry: [{ reference: "urn:uuid:7f9d6b1a-0000-4000-8000-000000000003" }],
              section: [{ title: "Follow-up", text: { status: "generated", div: "<div xmlns=\"http://www.w3.org/1999/xhtml\">Call 617-555-0199 if fever returns.</div>" } }],
            },
          ],
        },
      },
      {
        fullUrl: "urn:uuid:7f9d6b1a-0000-4000-8000-000000000002",
        resource: { resourceType: "Patient", id: "7f9d6b1a-0000-4000-8000-000000000002", meta, name: [{ family: "Ramírez", given: ["Carla77"] }], telecom: [{ system: "phone", value: "617-555-0199" }], gender: "female", birthDate: "1958-02-14" },
      },
      {
        fullUrl: "urn:uuid:7f9d6b1a-0000-4000-8000-000000000003",
        resource: { resourceType: "Condition", id: "7f9d6b1a-0000-4000-8000-000000000003", clinicalStatus: { coding: [{ system: "http://terminology.hl7.org/CodeSystem/condition-clinical", code: "active" }] }, code: { text: "Community-acquired pneumonia" }, subject: { reference: "urn:uuid:7f9d6b1a-0000-4000-8000-000000000002" }, onsetDateTime: "2026-11-15" },
      },
      { fullUrl: "urn:uuid:7f9d6b1a-0000-4000-8000-000000000004", resource: { resourceType: "Practitioner", id: "7f9d6b1a-0000-4000-8000-000000000004", name: [{ family: "Osler", given: ["William"] }] } },
    ],
  };
}

/** A transaction that also deletes and reads: entries without a resource. */
export function transactionWithRequests(): Json {
  return {
    resourceType: "Bundle",
    meta,
    type: "transaction",
    entry: [
      { fullUrl: "urn:uuid:11111111-0000-4000-8000-000000000001", resource: { resourceType: "Patient", gender: "male", birthDate: "1970-01-01" }, request: { method: "POST", url: "Patient", ifNoneExist: "identifier=urn:oid:1.2.36.146.595.217.0.1|12345" } },
      {
        fullUrl: "urn:uuid:11111111-0000-4000-8000-000000000002",
        resource: { resourceType: "Condition", code: { text: "Type 2 diabetes mellitus" }, clinicalStatus: { coding: [{ code: "active" }] }, subject: { reference: "urn:uuid:11111111-0000-4000-8000-000000000001" }, asserter: { reference: "Practitioner?identifier=http://hl7.org/fhir/sid/us-npi|9999999999", display: "Dr. Example" } },
        request: { method: "POST", url: "Condition" },
      },
      { request: { method: "DELETE", url: "Patient/234" } },
      { request: { method: "GET", url: "Patient?name=peter" } },
    ],
  };
}

/** Synthea's STU3 output: Condition.clinicalStatus as a plain code. */
export function stu3Bundle(): Json {
  return {
    resourceType: "Bundle",
    meta,
    type: "transaction",
    entry: [
      { fullUrl: "urn:uuid:22222222-0000-4000-8000-000000000001", resource: { resourceType: "Patient", id: "22222222-0000-4000-8000-000000000001", gender: "female", birthDate: "1990-05-05" }, request: { method: "POST", url: "Patient" } },
      {
        fullUrl: "urn:uuid:22222222-0000-4000-8000-000000000002",
        resource: { resourceType: "Condition", id: "22222222-0000-4000-8000-000000000002", clinicalStatus: "active", verificationStatus: "confirmed", code: { coding: [{ system: "http://snomed.info/sct", code: "44054006", display: "Diabetes" }] }, subject: { reference: "urn:uuid:22222222-0000-4000-8000-000000000001" }, onsetDateTime: "2010-01-01T00:00:00-05:00", assertedDate: "2010-01-01T00:00:00-05:00" },
        request: { method: "POST", url: "Condition" },
      },
    ],
  };
}

/** Synthea's DSTU2 output: MedicationOrder, Condition.patient. */
export function dstu2Bundle(): Json {
  return {
    resourceType: "Bundle",
    meta,
    type: "collection",
    entry: [
      { fullUrl: "urn:uuid:33333333-0000-4000-8000-000000000001", resource: { resourceType: "Patient", id: "33333333-0000-4000-8000-000000000001", gender: "male", birthDate: "1960-03-03" } },
      { fullUrl: "urn:uuid:33333333-0000-4000-8000-000000000002", resource: { resourceType: "Condition", id: "33333333-0000-4000-8000-000000000002", patient: { reference: "urn:uuid:33333333-0000-4000-8000-000000000001" }, code: { text: "Hypertension" }, clinicalStatus: "active", verificationStatus: "confirmed", dateRecorded: "2001-01-01" } },
      { fullUrl: "urn:uuid:33333333-0000-4000-8000-000000000003", resource: { resourceType: "MedicationOrder", id: "33333333-0000-4000-8000-000000000003", patient: { reference: "urn:uuid:33333333-0000-4000-8000-000000000001" }, status: "active", dateWritten: "2001-01-01", medicationCodeableConcept: { text: "Lisinopril" } } },
    ],
  };
}

/** An Observation whose `extension` nests `depth` levels: the shape of the 240 KB bundle that stalled the server. */
export function deeplyNested(depth: number): Json {
  let ext: Json = { url: "http://example.org/leaf", valueString: "x" };
  for (let i = 0; i < depth; i++) ext = { url: "http://example.org/nested", extension: [ext] };
  return {
    resourceType: "Bundle",
    meta,
    type: "collection",
    entry: [{ resource: { resourceType: "Observation", id: "deep", status: "final", code: { text: "Heart rate" }, valueQuantity: { value: 80, unit: "/min" }, extension: [ext] } }],
  };
}
