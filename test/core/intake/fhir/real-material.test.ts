import { describe, expect, it } from "vitest";
import { bundleToCase } from "../../../../src/core/intake/fhir/bundle-to-case.js";
import { fhirOrigin } from "../../../../src/core/contracts/fhir-origin.js";
import { isMedmmvError, type MedmmvError } from "../../../../src/core/contracts/errors.js";
import { STATUS_BY_CODE } from "../../../../src/server/http/errors.js";
import { realBundle } from "./real-material.js";

const opts = { maxImageBytes: 5_000_000, now: new Date("2026-12-03T10:00:00Z") };

function read(file: string) {
  const c = bundleToCase(realBundle(file), opts);
  return { c, notes: c.notes ?? "", ignored: fhirOrigin(c)!.ignoredResources };
}

function refusal(body: unknown): { status: number; err: MedmmvError; issues: Array<{ path: string; message: string; fhirCode: string }> } {
  try {
    bundleToCase(body, opts);
  } catch (err) {
    if (!isMedmmvError(err)) throw err;
    return { status: STATUS_BY_CODE[err.code], err, issues: err.details!.issues as never };
  }
  throw new Error("the bundle was accepted");
}

/**
 * Documents once refused for references R4 does not require to resolve: accepted, every key
 * fact in the notes, each reference that does not resolve listed with why.
 */
describe("IPS documents from HL7 Connectathons (real material)", () => {
  it.each([
    [
      "NHS UK",
      "ips/UK_NHSx_IPS_Example_01-modified.json",
      ["Anxiety with depression", "Swollen legs", "Postviral cough", "Upper respiratory infection", "Sesame oil", "Difficulty breathing", "Metformin 2G Modified-Release tablets", "Sertraline 100mg tablets", "Surgery Consultation"],
      [
        ["Condition/Problem-E-Post-viral-cough", 'encounter.reference: reference "Encounter/Encounter2" is not in the document'],
        ["MedicationRequest/32", 'dispenseRequest.performer.reference: reference "Organization/1" is not in the document'],
      ],
    ],
    [
      "a US institute",
      "ips/US_Interoperability_Institute_Jared_Bruce_Adams-IPS.json",
      ["COVID-19; Active", "Cough (finding)", "Hemoptysis (finding)", "Fever (finding)", "Body temperature 40.2 Cel", "Respiratory rate 27 /min", "Heart rate 192 /min", "Oxygen saturation in Arterial blood 78 %"],
      [
        ["Condition/*", 'asserter.reference: reference "Practitioner/2934" is not in the document'],
        ["Condition/*", 'encounter.reference: reference "Encounter/7344" is not in the document'],
      ],
    ],
    [
      "Epic, September 2024",
      "ips/US_Epic_Connectathon_Sept.json",
      ["Type 1 DM with end-stage renal disease", "Hereditary nephritis", "Diffuse cellulitis", "PENICILLINS", "metformin (GLUCOPHAGE) tablet — 850 mg", "predniSONE (DELTASONE) tablet", "MMR (2007-06-14)", "Peritonitis; Resolved"],
      [
        ["Medication/ecJfN.Z6LevgS2GZ6oM3x4IeodP.WvXPlm1OXRNxiIqIbz9pr3DjDvK--JJ92w4pmI5B4s4XPyW23KDH1CCoIi9XQcbaOmm7RAP9Nbg5fMNw3", "id is 109 characters (R4 allows 64)"],
        ["Patient/*", 'generalPractitioner[0].reference: reference "Practitioner/e0y4Qz7pf9dsJyvCmVSl6WQ3" is not in the document'],
        ["Immunization/exHF01.mZ0e7Hj11lY-XXYC2R2C9A5wC7Dfc2zSPHoYk3", 'performer[0].actor.reference: reference "Practitioner/eSC8Yf7UDTJx4ud-X0qPsbQ3" is not in the document'],
      ],
    ],
    [
      "Epic, January 2025",
      "ips/US_Epic_Jan_idrefs.json",
      ["Type 1 DM with end-stage renal disease", "Hereditary nephritis", "PENICILLINS", "metformin (GLUCOPHAGE) tablet", "predniSONE (DELTASONE) tablet"],
      [["Medication/ejbzzqQmSEAXVwsPUwpyK8naG0lBVTDz-3miti1.DWuIQxmDukLwuAZT2d0X3PLG3skcjsiYYQHCjBzptT9Cq88iye.8X6GVrHQa3sldgn-I3", "id is 109 characters (R4 allows 64)"]],
    ],
    [
      "Epic, May 2025",
      "ips/hl7_connectathon_may_2025_epic_example2.json",
      ["Essential hypertension", "Acute bronchitis", "PCOS (polycystic ovarian syndrome)", "NICKEL", "LACTOSE", "MULTIVITAMIN ADULT PO TABS", "ferrous gluconate (FERGON) tablet", "drospirenone-ethinyl estradiol (YAZ)", "Pneumonia; Resolved"],
      [
        ["Medication/*", "id is 109 characters (R4 allows 64)"],
        ["Patient/*", 'generalPractitioner[0].reference: reference "Practitioner/eR7klEsAf29cdTFOh25gtmA3" is not in the document'],
      ],
    ],
  ])("%s is accepted with every key fact, each degraded element listed", (_who, file, facts, degraded) => {
    const { notes, ignored } = read(file);
    for (const f of facts) expect(notes, f).toContain(f);
    // "Type/*": any resource of that type (the list names each; the test names the rule).
    const named = (resource: string, listed: string) => (resource.endsWith("/*") ? listed.startsWith(resource.slice(0, -1)) : listed === resource);
    for (const [resource, reason] of degraded) expect(ignored.some((i) => named(resource!, i.resource) && i.reason.startsWith(reason!)), `${resource}: ${reason}`).toBe(true);
    expect(notes).not.toContain("medication (not named)");
  });

  it("MEDITECH: a malformed reference (the type written twice) is named precisely, and the rest is read", () => {
    const { ignored, notes } = read("ips/US_MEDITECH_ips_1.json");
    expect(ignored).toContainEqual(expect.objectContaining({ reason: expect.stringContaining('reference "Organization/Organization/a9f7c0e3-9bb0-51eb-8ab4-99ac7bdaaa89" is malformed (the resource type is written twice; R4 writes Organization/a9f7c0e3-9bb0-51eb-8ab4-99ac7bdaaa89)') }));
    expect(notes).not.toMatch(/urn:uuid problem/);
    expect(notes).toContain("amoxicillin intolerance (medication); reaction: Vomiting (severe)");
    expect(notes).toContain("lisinopriL");
  });

  it("Australia (gestational diabetes): the contained Medication #metformin is named Metformin", () => {
    const { notes } = read("ips/AU-example-sparked.json");
    expect(notes).toMatch(/\[MedicationStatement\/05292a9c-2bc9-43a7-b935-0a61ede063da\] Metformin — 500mg twice daily \(active/);
    expect(notes).not.toContain("medication (not named)");
  });

  it("ELGA Austria: the MedicationStatements of status unknown are listed apart from history", () => {
    const { notes } = read("ips/AT_ELGA_GmbH_01.json");
    const unknown = notes.slice(notes.indexOf("Medications of unknown status"));
    expect(notes.indexOf("Medications of unknown status")).toBeGreaterThan(-1);
    const section = unknown.slice(0, unknown.indexOf("\n\n"));
    expect(section).toContain("ASPIRIN TBL 500MG (unknown); 6 times in all since 2014-05-05");
    expect(section).toContain("Ciproxin (unknown)");
    const history = notes.includes("History (resolved, stopped and older):") ? notes.slice(notes.indexOf("History (resolved, stopped and older):")) : "";
    expect(history).not.toContain("(unknown)");
  });

  it("the Netherlands: the name its narratives label as the patient's ('Patiënt: …'), which its Patient does not state, is scrubbed everywhere", () => {
    const { notes } = read("ips/NL_Curavista_01.json");
    expect(notes).toContain("Patiënt: [name]. Id: 1343");
    expect(notes).toContain("Subject: [name].");
    expect(notes).not.toMatch(/hen[cç]|m[eé]ld[eë]rs/i);
  });
});

describe("US Core's examples as a $everything searchset (real material)", () => {
  it("is accepted; the Media whose image is only a URL is left out and listed; the key facts are in the notes", () => {
    const { notes, ignored, c } = read("us-core/Patient-example-everything.json");
    for (const f of ["Active Duodenal Ulcer", "Fear of becoming fat", "sulfonamide antibacterial (medication); reaction: skin rash", "Latex (environment)", "Tylenol PM Pill", "Nizatidine 15 MG/ML Oral Solution", "Blood pressure systolic and diastolic 109/44 mmHg", "Oxygen saturation in Arterial blood 95 %"]) {
      expect(notes, f).toContain(f);
    }
    expect(ignored).toContainEqual({ resource: "Media/chest-xray", reason: "content.url points at an image outside the bundle (http://example.org/fhir/Binary/A12345): not fetched, the image is left out" });
    expect(c.images ?? []).toHaveLength(0);
  });
});

describe("nothing readable → 422 naming what the record holds", () => {
  it("an IPS whose sections all say there is no information (and a DNR statement)", () => {
    const r = refusal(realBundle("ips/DE_no_info_with_Advance_Directive.json"));
    expect(r.status).toBe(422);
    expect(r.issues[0]!.message).toMatch(/^nothing readable: all its sections and entries say no information is available; besides, an advance directive, which is not a clinical finding/);
  });

  it("a DocumentReference searchset whose documents hold only URLs (synthetic, in the shape of R4's DocumentReference example)", () => {
    const r = refusal(realBundle("synthetic/documentreference-url-only-searchset.json"));
    expect(r.status).toBe(422);
    expect(r.issues[0]!.message).toMatch(/^nothing readable: its documents and images hold only links to other servers, which are not fetched/);
  });

  it("…but one document with text among them makes the record readable", () => {
    const b = realBundle("synthetic/documentreference-url-only-searchset.json");
    (b.entry[1]!.resource.content as Array<{ attachment: Record<string, unknown> }>).push({ attachment: { contentType: "text/plain", data: Buffer.from("Admitted with chest pain; troponin negative.").toString("base64") } });
    expect(bundleToCase(b, opts).notes).toContain("troponin negative");
  });
});

describe("lenient where nothing clinical depends on it, strict where it does", () => {
  const doc = () => realBundle("ips/AU-example-sparked.json");
  const at = (b: ReturnType<typeof doc>, type: string) => b.entry.findIndex((e) => e.resource.resourceType === type);

  it("an id with characters R4 does not allow degrades only its name", () => {
    const b = doc();
    const i = at(b, "Immunization");
    b.entry[i]!.resource.id = "imm 1/odd";
    const c = bundleToCase(b, opts);
    expect(c.notes).not.toContain("imm 1/odd");
    // Named by its fullUrl's UUID (the bundle's own name for it), never by the odd id.
    const uuid = String(b.entry[i]!.fullUrl).replace("urn:uuid:", "");
    expect(c.notes).toContain(`[Immunization/${uuid}]`);
    expect(fhirOrigin(c)!.ignoredResources).toContainEqual({ resource: `Immunization/${uuid}`, reason: "id \"imm 1/odd\" has characters R4 does not allow in an id (letters, digits, '-', '.'): read, named by its place in the bundle" });
  });

  it("a modifierExtension refuses its resource (R4 forbids reading it as if absent), not the record", () => {
    const b = doc();
    const i = at(b, "Condition");
    const id = String(b.entry[i]!.fullUrl).replace("urn:uuid:", "");
    b.entry[i]!.resource.modifierExtension = [{ url: "http://example.org/negated", valueBoolean: true }];
    const c = bundleToCase(b, opts);
    expect(c.notes).not.toContain(`[Condition/${id}]`);
    expect(fhirOrigin(c)!.ignoredResources).toContainEqual(expect.objectContaining({ resource: `Condition/${id}`, reason: expect.stringContaining("modifierExtension (http://example.org/negated)") }));
  });

  it("a section entry missing from the document is refused, naming R4's rule", () => {
    const b = doc();
    const sections = (b.entry[0]!.resource.section as Array<{ entry?: Array<{ reference: string }> }>);
    const ref = sections.find((s) => s.entry?.length)!.entry![0]!.reference;
    b.entry = b.entry.filter((e) => e.fullUrl !== ref);
    const r = refusal(b);
    expect(r.status).toBe(422);
    expect(r.issues[0]!.message).toContain("a document Bundle must contain what its Composition's subject and sections reference (FHIR R4 bundle.html#document)");
  });

  it("a second Patient in a document is refused, naming the rule", () => {
    const b = doc();
    b.entry.push({ fullUrl: "urn:uuid:0b6f1a3e-1111-4222-8333-944455556666", resource: { resourceType: "Patient", gender: "male" } } as never);
    const r = refusal(b);
    expect(r.status).toBe(422);
    expect(r.issues[0]!.message).toMatch(/^two Patients who are not the same person.*a document has one subject: FHIR R4 Composition.subject/);
  });

  it("an entry of another patient is refused, naming the rule", () => {
    const b = doc();
    b.entry[at(b, "Condition")]!.resource.subject = { reference: "Patient/someone-else" };
    const r = refusal(b);
    expect(r.status).toBe(422);
    expect(r.issues[0]!.message).toContain("names a patient this document does not hold");
  });
});
