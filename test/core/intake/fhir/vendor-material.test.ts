/**
 * Vendors' and national guides' published examples (real public material, sources in
 * test/fixtures/fhir/real/README.md): Oracle Health (Millennium) R4 answers as its documentation
 * shows them (`oracle/`: another patient's Condition in a search answer, the patient's name only
 * in a reference's display, administrations, family history, radiology reports that are only
 * links, social-history answers) and HL7 UK Core's Richard Smith (`uk-core/`: ids that spell a name).
 */
import { describe, expect, it } from "vitest";
import { bundleToCase } from "../../../../src/core/intake/fhir/bundle-to-case.js";
import { OTHER_PATIENT_REASON } from "../../../../src/core/intake/fhir/one-patient.js";
import { isMedmmvError } from "../../../../src/core/contracts/errors.js";
import { realBundle } from "./real-material.js";

const opts = { maxImageBytes: 1_000_000, now: new Date("2026-12-01T00:00:00Z") };
const ignoredOf = (c: ReturnType<typeof bundleToCase>) => (c.metadata!.fhir as { ignoredResources: Array<{ resource: string; reason: string }> }).ignoredResources;

describe("Oracle Health's documented R4 answers", () => {
  it("Condition?patient=12724066 holding a Condition of Patient/9279171: that one is not read, and named", () => {
    const c = bundleToCase(realBundle("oracle/condition-searchset.json"), opts);
    expect(c.notes).toContain("Pregnant");
    expect(c.notes).toContain("Anemia");
    expect(c.notes).not.toMatch(/\bdescription\b/); // the other patient's health concern
    expect(ignoredOf(c).filter((i) => i.reason === OTHER_PATIENT_REASON).map((i) => i.resource)).toEqual([expect.stringMatching(/^Condition \(Bundle\.entry\[\d+\]\)$/)]);
    expect(JSON.stringify(ignoredOf(c))).not.toContain("bed1c2ec");
  });

  it("the name only in the subject's display (SMART, NANCY) reaches no note, and the Patient id is a pseudonym", () => {
    const b = realBundle("oracle/condition-searchset.json") as { entry: Array<{ resource: Record<string, unknown> }> };
    b.entry[0]!.resource.note = [{ text: "Nancy Smart reports morning sickness; Ms. Smart to return in 2 weeks. Patient 12724066." }];
    const c = bundleToCase(b, opts);
    expect(c.notes).toContain("[name] reports morning sickness; [name] to return in 2 weeks.");
    // Only the server's own mapping (metadata.fhir.pseudonyms, for the export back to the EHR) keeps the raw id.
    const { pseudonyms, ...fhir } = c.metadata!.fhir as Record<string, unknown>;
    expect(Object.values(pseudonyms as Record<string, string>)).toEqual(["Patient/12724066"]);
    expect(JSON.stringify({ ...c, metadata: { fhir } }).toLowerCase()).not.toMatch(/nancy|smart|12724066/);
  });

  it("a record of MedicationAdministrations only is accepted: what was given, when", () => {
    const c = bundleToCase(realBundle("oracle/medication-administration-searchset.json"), opts);
    expect(c.notes).toContain("Medications given (administrations):");
    expect(c.notes).toContain("potassium acetate + K-Sol + Dextrose 10% with 0.2% NaCl — 250 milliliter (iso1000) IV Piggyback (given, 2020-05-11)");
    expect(c.notes).toContain("amoxicillin (not given (Not Done: Change in Patient Status), 2020-05-05)");
  });

  it("a record of FamilyMemberHistory only is accepted: who had what", () => {
    const c = bundleToCase(realBundle("oracle/family-member-history-searchset.json"), opts);
    expect(c.notes).toContain("Family history:");
    // Oracle's condition-result and lifecycle modifier extensions are understood: the sister has the cancer, it is current.
    expect(c.notes).toContain("Sister: Cancer, onset age 15 Years, note: Cancer is common in the family");
    expect(JSON.stringify(c).toLowerCase()).not.toContain("smart"); // the relative's name (FamilyMemberHistory.name)
    expect(c.notes).not.toContain("12504018"); // the patient's id, which Oracle writes into the FamilyMemberHistory ids
  });

  it("radiology reports whose only content is Binary links are not read from their title: 422 naming why", () => {
    let err: unknown;
    try {
      bundleToCase(realBundle("oracle/diagnostic-report-radiology-searchset.json"), opts);
    } catch (e) {
      err = e;
    }
    expect(isMedmmvError(err) && err.code).toBe("UNPROCESSABLE");
    expect((err as Error).message).toMatch(/hold only links to other servers, which are not fetched/);
  });
});

describe("Oracle Health's social history: questions and their answers", () => {
  it("each question reads 'question: answer', not one trend of the group's code; the group itself is folded", () => {
    const c = bundleToCase(realBundle("oracle/observation-social-history-searchset.json"), opts);
    expect(c.notes).toContain("SHX Alcohol use: Past");
    expect(c.notes).not.toContain("Alcohol (no value)");
    expect(c.notes).not.toMatch(/earlier Past/);
  });
});

describe("HL7 UK Core's Richard Smith example (real material, test/fixtures/fhir/real/uk-core)", () => {
  it("the Patient id that spells his name, his NHS number, phone and address reach no note, ignored resource or metadata but the server's own mapping", () => {
    const c = bundleToCase(realBundle("uk-core/UKCore-RichardSmith-collection.json"), opts);
    expect(c.notes).toMatch(/Amoxicillin/i);
    const { pseudonyms, ...fhir } = c.metadata!.fhir as Record<string, unknown>;
    expect(Object.values(pseudonyms as Record<string, string>)).toContain("Patient/UKCore-Patient-RichardSmith-Example");
    const written = JSON.stringify({ ...c, metadata: { fhir } }).toLowerCase();
    for (const leak of ["richard", "smith", "9912003888", "01131231234", "sandmoor", "ls17"]) expect(written, leak).not.toContain(leak);
  });
});
