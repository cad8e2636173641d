import { Fhir } from "fhir";
import { describe, expect, it } from "vitest";
import { bundleToCase, DEFAULT_FHIR_QUESTION } from "../../../../src/core/intake/fhir/bundle-to-case.js";
import { fhirOrigin } from "../../../../src/core/contracts/fhir-origin.js";
import { resourceAt } from "../../../../src/core/intake/fhir/resource-lines.js";
import { prepareCase } from "../../../../src/core/intake/case-intake.js";
import { ClinicalCase } from "../../../../src/core/contracts/clinical-case.js";
import { FIXTURES, fixtureBundle } from "./fhir-fixtures.js";
import { patientPseudonym } from "../../../../src/core/intake/fhir/deidentify.js";

const opts = { maxImageBytes: 5_000_000 };

function lines(notes: string | undefined): string[] {
  return (notes ?? "").split("\n");
}

describe("the synthetic fixtures", () => {
  it.each(FIXTURES)("%s is a valid FHIR R4 bundle (FHIR.js validator)", (name) => {
    const report = new Fhir().validate(fixtureBundle(name));
    expect(report.messages.filter((m) => m.severity === "error")).toEqual([]);
  });
});

describe("bundleToCase: what a clinician would read", () => {
  it("STEMI: demographics, grouped lines naming their resources, the ECG image, the Encounter read", async () => {
    const c = bundleToCase(fixtureBundle("stemi"), opts);
    expect(ClinicalCase.parse(c)).toBeTruthy();
    expect(c.question).toBe(DEFAULT_FHIR_QUESTION);
    // Born 1968-05-14, bundle timestamp 2026-11-30.
    expect(c.patient).toEqual({ age: 58, sex: "male" });
    const l = lines(c.notes);
    expect(l).toContain("[Observation/bp-1] Blood pressure 150/95 mmHg (2026-11-30)");
    expect(l).toContain("[Observation/hr-1] Heart rate 108 beats/min, High (2026-11-30)");
    expect(l).toContain("[Observation/trop-1] Troponin I 2.4 ng/mL, Critical high, reference range ≤ 0.04 ng/mL (2026-11-30)");
    expect(l).toContain("[Observation/k-1] Potassium 4.1 mmol/L, Normal, reference range 3.5–5.1 mmol/L (2026-11-30)");
    expect(l).toContain("[MedicationStatement/ms-metformin] Metformin 500 mg oral tablet — 500 mg twice daily with meals (active, from 2019-05-01)");
    // Named through the Medication resource it references.
    expect(l).toContain("[MedicationStatement/ms-lisinopril] lisinopril 10 MG Oral Tablet — 10 mg once daily (active)");
    expect(l).toContain("[AllergyIntolerance/pcn] Penicillin allergy (medication); reaction: Hives (moderate); criticality high; active");
    expect(l).toContain("[Condition/htn] Essential hypertension; active; onset 2015-03-02");
    expect(l).toContain("[Procedure/chole] Laparoscopic cholecystectomy, completed (2012-09-18)");
    expect(l.find((x) => x.startsWith("[DiagnosticReport/ecg-report]"))).toContain("ST elevation in leads II, III and aVF");
    // The triage note's text hangs under its resource, indented.
    const doc = l.indexOf("[DocumentReference/triage-note] Emergency triage note (2026-11-30):");
    expect(doc).toBeGreaterThan(0);
    expect(l[doc + 1]).toBe("  Crushing substernal chest pain radiating to the left arm for 40 minutes.");
    // Sections in clinical order: what is true now, then measurements, then care and documents.
    const order = ["Patient:", "Active problems:", "Allergies and intolerances:", "Current medications:", "Vital signs (latest, with earlier readings):", "Laboratory results (latest, with earlier readings):", "Recent encounters:", "Procedures:", "Diagnostic reports:", "Notes and documents:", "Images:"].map((h) => l.indexOf(h));
    expect(order.every((v, i) => v >= 0 && (i === 0 || v > order[i - 1]!))).toBe(true);
    // No name or birth date goes to the model: the age is enough.
    expect(c.notes).not.toContain("Synthetic");
    expect(c.notes).not.toContain("1968");
    expect(c.images?.map((i) => i.id)).toEqual(["Media/ecg-strip"]);
    const prepared = await prepareCase(ClinicalCase.parse(c), { maxBytes: opts.maxImageBytes, maxPixels: 50_000_000, allowPath: false });
    expect(prepared.images[0]!.mimeType).toBe("image/png");
    expect(l).toContain("[Encounter/ed-visit] Encounter, EMER, in-progress");
    expect(fhirOrigin(c)!.ignoredResources).toEqual([]);
    expect(fhirOrigin(c)!.notes).toEqual({ budget: 16_000, chars: c.notes!.length, summarised: {}, leftOut: {}, duplicates: {} });
    expect(fhirOrigin(c)).toMatchObject({ bundleId: "synthetic-stemi", bundleType: "collection", patient: `Patient/${patientPseudonym("stemi-1")}`, resources: 18 });
  });

  it("pneumonia (searchset, absolute fullUrls): Media → Binary image, report text, preliminary CRP, outcome entry skipped", () => {
    const c = bundleToCase(fixtureBundle("pneumonia"), { ...opts, question: "What is the next best step?" });
    expect(c.question).toBe("What is the next best step?");
    // Born 1951-02-20; no bundle timestamp, so the latest clinical date (2026-11-28).
    expect(c.patient).toEqual({ age: 75, sex: "female" });
    const l = lines(c.notes);
    expect(l).toContain("[Observation/temp-1] Body temperature 39.2 °C, High (2026-11-28)");
    expect(l).toContain("[Observation/crp-1] C-reactive protein 182 mg/L, High, reference range ≤ 5 mg/L, preliminary (2026-11-28)");
    expect(l).toContain("[MedicationRequest/amox-1] Amoxicillin 1 g — 1 g orally three times daily for 5 days (active order, prescribed 2026-11-28)");
    expect(l).toContain("  IMPRESSION: Right lower lobe pneumonia.");
    expect(l.find((x) => x.startsWith("[DiagnosticReport/cxr-report]"))).toContain("results: Observation/wbc-1");
    expect(c.images).toHaveLength(1);
    expect(c.images![0]).toMatchObject({ id: "Media/cxr-1", caption: "Chest radiograph, PA view" });
    // The Binary was read through the Media: not a second image, not a line of its own.
    expect(c.notes).not.toContain("[Binary/");
    expect(fhirOrigin(c)!.ignoredResources).toEqual([]);
  });

  it("DKA (transaction, urn:uuid): ids from fullUrls, a year-month birth date, a blood-gas panel, a PDF link left out", () => {
    const c = bundleToCase(fixtureBundle("dka"), { ...opts, options: { A: "Diabetic ketoacidosis", B: "Gastroenteritis" } });
    expect(c.options).toEqual({ A: "Diabetic ketoacidosis", B: "Gastroenteritis" });
    expect(c.patient).toEqual({ age: 19, sex: "female" });
    const l = lines(c.notes);
    expect(l).toContain("[Observation/0f3a1c2e-5b6d-4e7f-8a9b-000000000003] Venous blood gas: pH 7.12, Low, reference range 7.31 – 7.41; Bicarbonate 9 mmol/L, Low (2026-11-29)");
    expect(l).toContain("[Observation/0f3a1c2e-5b6d-4e7f-8a9b-000000000004] Urine ketones 3+ (2026-11-29)");
    expect(l).toContain("  Kussmaul breathing; fruity breath odour.");
    // No ids yet (a transaction): the patient is known by its fullUrl.
    expect(fhirOrigin(c)?.patient).toBe("urn:uuid:0f3a1c2e-5b6d-4e7f-8a9b-000000000001");
    expect(fhirOrigin(c)!.ignoredResources).toEqual([{ resource: "DocumentReference/0f3a1c2e-5b6d-4e7f-8a9b-000000000006", reason: "content[1].attachment has no inline data (links are not fetched)" }]);
  });

  it("an HTML document is read as its text", () => {
    const b = fixtureBundle("stemi");
    const doc = b.entry.find((e) => e.resource.id === "triage-note")!.resource as { content: Array<{ attachment: Record<string, unknown> }> };
    doc.content[0]!.attachment = { contentType: "text/html", data: Buffer.from("<div><p>Pain <b>radiating</b> to the jaw.</p><script>alert(1)</script></div>").toString("base64") };
    const l = lines(bundleToCase(b, opts).notes);
    expect(l).toContain("  Pain radiating to the jaw.");
    expect(l.join("\n")).not.toMatch(/<|alert/);
  });

  it("entered-in-error facts are left out and listed; ages under two are in months", () => {
    const b = fixtureBundle("stemi");
    (b.entry.find((e) => e.resource.id === "hr-1")!.resource as Record<string, unknown>).status = "entered-in-error";
    (b.entry[0]!.resource as Record<string, unknown>).birthDate = "2025-06-01";
    const c = bundleToCase(b, opts);
    expect(c.notes).not.toContain("Heart rate");
    expect(fhirOrigin(c)!.ignoredResources).toContainEqual({ resource: "Observation/hr-1", reason: "status is entered-in-error" });
    expect(c.patient?.age).toBeCloseTo(1.42, 2);
    expect(lines(c.notes)).toContain(`[Patient/${patientPseudonym("stemi-1")}] 17-month-old male`);
  });
});

describe("resourceAt: a position in the notes leads back to its resource", () => {
  it.each(FIXTURES)("%s: every rendered line and every indented document line", (name) => {
    const notes = bundleToCase(fixtureBundle(name), opts).notes!;
    let owner: string | null = null;
    let offset = 0;
    for (const line of notes.split("\n")) {
      const head = /^\[([^\]]+)\] /.exec(line);
      if (head) owner = head[1]!;
      else if (!line.startsWith("  ")) owner = null;
      // The middle of the line, not just its start, belongs to the same resource.
      expect(resourceAt(notes, offset + Math.floor(line.length / 2))).toBe(owner);
      offset += line.length + 1;
    }
  });

  it("headers, blank lines and the question after the notes name no resource", () => {
    const text = "Vital signs:\n[Observation/bp-1] Blood pressure 150/95 mmHg\n\nWhat is the most likely diagnosis?";
    expect(resourceAt(text, 3)).toBeNull();
    expect(resourceAt(text, text.indexOf("150/95"))).toBe("Observation/bp-1");
    expect(resourceAt(text, text.indexOf("most likely"))).toBeNull();
  });
});
