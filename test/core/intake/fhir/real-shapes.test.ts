import { describe, expect, it } from "vitest";
import { bundleToCase, bundleToCaseYielding, isNoClinicalFactsRefusal, FHIR_DEFAULTS } from "../../../../src/core/intake/fhir/bundle-to-case.js";
import { fhirOrigin } from "../../../../src/core/contracts/fhir-origin.js";
import { ClinicalCase } from "../../../../src/core/contracts/clinical-case.js";
import { isMedmmvError, type MedmmvError } from "../../../../src/core/contracts/errors.js";
import { STATUS_BY_CODE } from "../../../../src/server/http/errors.js";
import { patientPseudonym } from "../../../../src/core/intake/fhir/deidentify.js";
import { resourceAt } from "../../../../src/core/intake/fhir/resource-lines.js";
import { PERSON, identifyingValues, syntheaShaped } from "./synthea-shaped.js";
import { deeplyNested, documentBundle, dstu2Bundle, hl7SearchsetExample, observationSearchset, operationOutcomeOnly, stu3Bundle, transactionWithRequests } from "./real-shapes.js";

const opts = { maxImageBytes: 5_000_000 };

function refusal(body: unknown, o: Partial<Parameters<typeof bundleToCase>[1]> = {}): { status: number; err: MedmmvError; issues: Array<{ path: string; message: string; fhirCode: string }> } {
  try {
    bundleToCase(body, { ...opts, ...o });
  } catch (err) {
    if (!isMedmmvError(err)) throw err;
    return { status: STATUS_BY_CODE[err.code], err, issues: err.details!.issues as never };
  }
  throw new Error("the bundle was accepted");
}

/** No value the bundle states about the patient appears in the notes, in any case. */
function expectNoIdentifiers(notes: string): void {
  const lower = notes.toLowerCase();
  for (const v of identifyingValues()) expect(lower, v).not.toContain(v.toLowerCase());
}

describe("a current Synthea R4 transaction bundle (synthetic, 40 years of care)", () => {
  const bundle = syntheaShaped({ shape: "current", years: 40 });
  const c = bundleToCase(bundle, opts);
  const notes = c.notes!;
  const origin = fhirOrigin(c)!;

  it("is accepted: hundreds of conditional references point outside the bundle", () => {
    const conditional = JSON.stringify(bundle).match(/"(Practitioner|Organization|Location)\?identifier=/g)!.length;
    expect(conditional).toBeGreaterThan(466);
    expect(ClinicalCase.safeParse(c).success).toBe(true);
    // Born 1979-04-11; the record's date is its latest fact (no Bundle.timestamp).
    expect(c.patient).toEqual({ age: Number(origin.referenceDate.slice(0, 4)) - 1979 - (origin.referenceDate.slice(5, 10) < "04-11" ? 1 : 0), sex: "male" });
  });

  it("the notes fit the budget and are filled in clinical order", () => {
    expect(notes.length).toBeLessThanOrEqual(FHIR_DEFAULTS.notesBudget);
    const heads = ["Patient:", "Active problems:", "Allergies and intolerances:", "Current medications:", "Vital signs (latest, with earlier readings):", "Laboratory results (latest, with earlier readings):", "Recent encounters:", "Procedures:", "Immunizations:", "Devices:", "Imaging studies:", "Diagnostic reports:"].map((h) => notes.split("\n").indexOf(h));
    expect(heads.every((v, i) => v >= 0 && (i === 0 || v > heads[i - 1]!))).toBe(true);
    expect(notes).toMatch(/\] Essential hypertension \(disorder\); Active; onset 2012-06-01/);
    expect(notes).toMatch(/\] lisinopril 10 MG Oral Tablet — Take one tablet by mouth daily \(active order, prescribed 2025-/);
    // Stopped refills are history, condensed: not forty lines of the same drug.
    expect(notes.match(/lisinopril 10 MG/g)!.length).toBeLessThanOrEqual(2);
  });

  it("each vital and lab code is one line: the latest value, the earlier few with dates, the count; values rounded", () => {
    const height = notes.split("\n").filter((l) => l.includes("Body Height"));
    expect(height).toHaveLength(1);
    expect(height[0]).toMatch(/Body Height \d{3}(\.\d)? cm \(2025-\d\d-\d\d\); earlier \d{3}(\.\d)? cm \(\d{4}-\d\d-\d\d\), .*; 40 readings since 1986-/);
    expect(notes).not.toMatch(/\d\.\d{3,}/); // no 185.8289545670521
    expect(notes.split("\n").filter((l) => l.includes("Glucose"))).toHaveLength(1);
    expect(origin.notes!.summarised.Observation).toBeGreaterThan(300);
  });

  it("encounters with their reasons, immunizations condensed, the device and the imaging study listed", () => {
    expect(notes).toMatch(/\[Encounter\/[^\]]+\] Encounter for symptom \(procedure\), AMB \(20\d\d-\d\d-\d\d\); reason: Acute bronchitis \(disorder\)/);
    expect(notes).toMatch(/\[Immunization\/[^\]]+\] Influenza, seasonal, injectable, preservative free \(2025-04-10\); 40 times in all since 1986-/);
    expect(notes).toMatch(/\[Device\/[^\]]+\] Blood pressure cuff \(physical object\)/);
    expect(notes).toMatch(/\[ImagingStudy\/[^\]]+\] Plain chest X-ray \(procedure\), modality Digital Radiography, body site Thoracic structure \(body structure\), 1 series, 2 images \(2024-02-10\)/);
    // The UDI is an identifier, not a fact.
    expect(notes).not.toContain("09876543210987");
  });

  it("each note once, though Synthea writes it to a DiagnosticReport and a DocumentReference", () => {
    const documents = bundle.entry.filter((e: { resource: { resourceType: string } }) => e.resource.resourceType === "DocumentReference").length;
    expect(documents).toBeGreaterThan(40);
    expect(origin.notes!.duplicates).toEqual({ DocumentReference: documents });
    const firstNote = notes.indexOf("# Chief Complaint");
    expect(firstNote).toBeGreaterThan(0);
    // Billing never read, never counted against the cap; listed by type.
    expect(origin.ignoredResources).toContainEqual({ resource: "Claim", reason: expect.stringMatching(/^resource type Claim is not read \(\d+ resources\)$/) });
    expect(origin.ignoredResources.length).toBeLessThan(10);
  });

  it("no name part, address, phone, identifier value or birth date of the patient or the spouse reaches the notes", () => {
    expectNoIdentifiers(notes);
    expect(notes).toMatch(/  \[name\]\n   ?is a \d\d year-old non-hispanic white male/); // "Bob965\n is a 46 year-old"
    // The MRN is the Patient.id: the notes name the patient by a stable pseudonym, the export gets the real id back.
    expect(notes).toContain(`[Patient/${patientPseudonym(PERSON.id)}] ${c.patient!.age}-year-old male`);
    expect(origin.pseudonyms).toEqual({ [`Patient/${patientPseudonym(PERSON.id)}`]: `Patient/${PERSON.id}` });
    // The case names the patient by the pseudonym too; the export maps it back through `pseudonyms`.
    expect(origin.patient).toBe(`Patient/${patientPseudonym(PERSON.id)}`);
    expect(resourceAt(notes, notes.indexOf("-year-old male"))).toBe(`Patient/${patientPseudonym(PERSON.id)}`);
  });

  it("counts what the budget left out, per resource type", () => {
    const small = bundleToCase(bundle, { ...opts, notesBudget: 3_000 });
    expect(small.notes!.length).toBeLessThanOrEqual(3_000);
    const left = fhirOrigin(small)!.notes!.leftOut;
    expect(Object.values(left).reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
    // What is true now survives the smallest budget.
    expect(small.notes).toContain("Essential hypertension");
    expect(small.notes).toContain("Allergy to peanuts");
  });

  it("the resource cap counts only resources read: Claims and ExplanationOfBenefits do not use it up", () => {
    const readCount = bundle.entry.filter((e: { resource: { resourceType: string } }) => !["Claim", "ExplanationOfBenefit", "Provenance"].includes(e.resource.resourceType)).length;
    expect(bundle.entry.length - readCount).toBeGreaterThan(bundle.entry.length * 0.1);
    expect(() => bundleToCase(bundle, { ...opts, maxResources: readCount })).not.toThrow();
    expect(refusal(bundle, { maxResources: readCount - 1 }).status).toBe(413);
  });
});

describe("a $everything searchset of 2,000+ entries (synthetic)", () => {
  it("is accepted within the budget; its relative Practitioner references point outside", async () => {
    const bundle = syntheaShaped({ shape: "everything", years: 45, sickVisits: 8 });
    expect(bundle.entry.length).toBeGreaterThan(2_000);
    const c = await bundleToCaseYielding(bundle, opts);
    expect(c.notes!.length).toBeLessThanOrEqual(FHIR_DEFAULTS.notesBudget);
    expectNoIdentifiers(c.notes!);
    expect(fhirOrigin(c)).toMatchObject({ bundleType: "searchset", bundleId: "synthetic-everything", resources: bundle.entry.length });
  });
});

describe("references as the bundle type defines them", () => {
  it("HL7's searchset example: the Patient it references is absent, the included Medication names the drug", () => {
    const c = bundleToCase(hl7SearchsetExample(), opts);
    expect(c.notes).toContain("[MedicationRequest/3123] Amoxicillin 250 mg capsule (unknown order)");
    expect(c.notes).toContain("[MedicationRequest/3124] Ibuprofen 400 mg (active order)");
    expect(c.patient).toBeUndefined();
  });

  it("a server's Observation search without its Patient, Encounter or Specimen: accepted, readings as a trend", () => {
    const c = bundleToCase(observationSearchset(), opts);
    expect(c.notes).toContain("[Observation/chol-2] Cholesterol [Mass/volume] in Serum or Plasma 5.9 mmol/L (2026-11-01); earlier 6.3 mmol/L (2026-10-01)");
  });

  it("a transaction: a conditional reference that matches an entry resolves to it; DELETE and GET entries are skipped and listed", () => {
    const b = transactionWithRequests();
    b.entry[0].resource.identifier = [{ system: "urn:oid:1.2.36.146.595.217.0.1", value: "12345" }];
    b.entry[1].resource.subject = { reference: "Patient?identifier=urn:oid:1.2.36.146.595.217.0.1|12345" };
    const c = bundleToCase(b, opts);
    expect(c.notes).toContain("Type 2 diabetes mellitus; active");
    expect(fhirOrigin(c)!.ignoredResources).toEqual([
      { resource: "Bundle.entry[2]", reason: "has no resource (DELETE Patient/234): skipped" },
      { resource: "Bundle.entry[3]", reason: "has no resource (GET Patient?name=peter): skipped" },
    ]);
  });

  it("a history bundle: each resource's newest version is read, older ones skipped and listed", () => {
    const b = observationSearchset();
    b.type = "history";
    const older = structuredClone(b.entry[1]);
    older.resource.valueQuantity.value = 9.9;
    b.entry.push(older);
    const c = bundleToCase(b, opts);
    expect(c.notes).toContain("5.9 mmol/L (2026-11-01)");
    expect(c.notes).not.toContain("9.9");
    expect(fhirOrigin(c)!.ignoredResources).toContainEqual({ resource: "Bundle.entry[3]", reason: "an older version of Observation/chol-2: skipped" });
  });

  it("a document must hold what its Composition's sections reference: a section entry it lacks is refused, naming that rule", () => {
    const b = documentBundle();
    b.entry.splice(2, 1); // the Condition the Composition's section lists
    const r = refusal(b);
    expect(r.status).toBe(422);
    expect(r.issues[0]).toMatchObject({ path: "Bundle.entry[0].resource.section[0].entry[0].reference", fhirCode: "not-found" });
    expect(r.issues[0]!.message).toContain("a document Bundle must contain what its Composition's subject and sections reference (FHIR R4 bundle.html#document)");
  });

  it("…but an author it lacks degrades only that reference: read by its display, and listed", () => {
    const b = documentBundle();
    b.entry.pop(); // the Practitioner the Composition's author points at
    const c = bundleToCase(b, opts);
    expect(c.notes).toContain("community-acquired pneumonia");
    expect(fhirOrigin(c)!.ignoredResources).toContainEqual({
      resource: "Composition/7f9d6b1a-0000-4000-8000-000000000001",
      reason: 'author[0].reference: reference "urn:uuid:7f9d6b1a-0000-4000-8000-000000000004" is not in the document (R4 asks for the Composition\'s author, attester and custodian too, but nothing clinical depends on them): read by its display',
    });
  });

  it("a document's Composition narrative is read, section by section, and de-identified", () => {
    const c = bundleToCase(documentBundle(), opts);
    expect(c.notes).toContain("[Composition/7f9d6b1a-0000-4000-8000-000000000001] Discharge summary, Discharge summary (2026-11-20):");
    expect(c.notes).toContain("  Hospital course: [name] was admitted with community-acquired pneumonia. Improved on ceftriaxone.");
    expect(c.notes).toContain("  Follow-up: Call [contact] if fever returns.");
    expect(c.notes).not.toMatch(/carla|ramírez|617/i);
  });
});

describe("no clinical facts, no case", () => {
  it.each([
    ["an OperationOutcome-only searchset", operationOutcomeOnly(), /the searchset holds only an OperationOutcome \(the server said: "No matching patient"\)/],
    ["an empty collection", { resourceType: "Bundle", type: "collection" }, /the collection bundle is empty/],
    ["a Patient alone", { resourceType: "Bundle", type: "collection", entry: [{ resource: { resourceType: "Patient", id: "p", gender: "male" } }] }, /no clinical fact was read from the bundle \(it holds Patient\)/],
    ["billing only", { resourceType: "Bundle", type: "collection", entry: [{ resource: { resourceType: "Claim", id: "c" } }] }, /no clinical fact was read/],
  ])("%s → 422, marked for the hook to tell apart", (_name, body, message) => {
    const r = refusal(body);
    expect(r.status).toBe(422);
    expect(r.issues[0]!.message).toMatch(message);
    expect(isNoClinicalFactsRefusal(r.err)).toBe(true);
  });
});

describe("other FHIR versions are named", () => {
  it("Synthea STU3 → refused as STU3, asking for R4", () => {
    const r = refusal(stu3Bundle());
    expect(r.status).toBe(400);
    expect(r.issues).toHaveLength(1);
    expect(r.issues[0]!.message).toMatch(/^this is a FHIR STU3 \(3\.0\) Bundle, not R4: Condition\.clinicalStatus is a code in STU3.*send FHIR R4 \(4\.0\.1\)/);
    expect(r.issues[0]!.path).toBe("Bundle.entry[1].resource.clinicalStatus");
  });

  it("Synthea DSTU2 → refused as DSTU2", () => {
    const r = refusal(dstu2Bundle());
    expect(r.issues[0]!.message).toMatch(/^this is a FHIR DSTU2 \(1\.0\) Bundle, not R4/);
  });
});

describe("linear and bounded", () => {
  it("an extension nested 40,000 deep is refused by the depth limit, naming where", () => {
    const r = refusal(deeplyNested(40_000));
    expect(r.status).toBe(400);
    expect(r.issues[0]).toMatchObject({ fhirCode: "too-costly" });
    expect(r.issues[0]!.path).toMatch(/^Bundle\.entry\[0\]\.resource\.extension\[0\]\.extension\[0\]/);
    expect(r.issues[0]!.message).toContain(`deeper than ${FHIR_DEFAULTS.maxDepth} levels`);
  });

  it("nesting within the limit is read", () => {
    // Each level of extension is an array and an object: two levels.
    expect(bundleToCase(deeplyNested(FHIR_DEFAULTS.maxDepth / 2 - 4), opts).notes).toContain("Heart rate 80 /min");
  });
});
