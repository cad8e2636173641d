import { describe, expect, it } from "vitest";
import { bundleToCase } from "../../../../src/core/intake/fhir/bundle-to-case.js";
import { labelledNames, patientPseudonym, splitNameParts } from "../../../../src/core/intake/fhir/deidentify.js";
import { FORBIDDEN, WRITTEN_VARIANTS, folded, variantsBundle } from "./written-variants.js";

const opts = { maxImageBytes: 1_000_000 };

describe("free-text de-identification holds against how people write", () => {
  const notes = bundleToCase(variantsBundle(), opts).notes!;
  const lineOf = (i: number) => notes.split("\n").find((l) => l.startsWith(`[Observation/note-${i}]`))!;

  it.each(WRITTEN_VARIANTS.map(([what, written], i) => [what, written, i] as const))("%s (%j) is scrubbed", (_what, written, i) => {
    const line = lineOf(i);
    // A stated thing becomes its placeholder; the Patient's id becomes its pseudonym.
    expect(line).toMatch(/the record reads (\[(name|birth date|contact|identifier|address)\]( \[(name|address)\])?|pt-[0-9a-f]{16})\.? here/);
    expect(folded(line)).not.toContain(folded(written).replace(/[^\p{L}\p{N}]/gu, "").slice(0, 4));
    for (const f of FORBIDDEN) expect(folded(line), f).not.toContain(f);
  });

  it("the clinical text around them is kept, units and accents as written", () => {
    const b = variantsBundle();
    b.entry.push({ resource: { resourceType: "Observation", id: "wbc", status: "final", code: { text: "Leucocytes" }, subject: { reference: "Patient/pt-variants" }, valueString: "4.5 ×10⁹/L; BSA 1.8 m²; température élevée, ½ dose" } } as never);
    expect(bundleToCase(b, opts).notes).toContain("Leucocytes 4.5 ×10⁹/L; BSA 1.8 m²; température élevée, ½ dose");
    expect(notes).toContain("Community-acquired pneumonia");
    expect(notes.match(/Cough for three days\./g)).toHaveLength(WRITTEN_VARIANTS.length);
  });
});

describe("names a narrative labels as the patient's", () => {
  it.each([
    ["Patient: Jan de Vries, 54", ["Jan", "Vries"]],
    ["Patiënt: H. Henç Méldërs. Id: 1343", ["Henc", "Melders"]],
    ["Naam: Pieter Bakker; geboren 1960", ["Pieter", "Bakker"]],
    ["Nom: Élodie Martin", ["Elodie", "Martin"]],
    ["Patientin: Anna-Lena Schmidt", ["Anna-Lena", "Anna", "Lena", "Schmidt"]],
    ["Paciente: María José García", ["Maria", "Jose", "Garcia"]],
    ["Name: Mr. John Smith", ["John", "Smith"]],
  ])("%s → %j", (text, parts) => {
    expect(labelledNames(text)).toEqual(parts);
  });

  it.each([["Patient: male, 54 years"], ["Test name: Hemoglobin A1c"], ["Patient: unknown"], ["patient: 45-year-old with cough"], ["Name: Municipal Hospital"], ["Name: NorthCare Health System"]])("%s names nobody", (text) => {
    expect(labelledNames(text)).toEqual([]);
  });

  it("the learned name is scrubbed everywhere in the record, also where no label precedes it", () => {
    const b = variantsBundle();
    b.entry.push({ resource: { resourceType: "Observation", id: "n-x", status: "final", code: { text: "Note" }, subject: { reference: "Patient/pt-variants" }, valueString: "Patiënt: Kees Jansen. Verder: Jansen belt morgen." } } as never);
    const notes = bundleToCase(b, opts).notes!;
    expect(notes).toContain("Patiënt: [name]. Verder: [name] belt morgen.");
  });
});

describe("a learned name that is also a word", () => {
  it("is scrubbed where it is written as a name (capitalised, capitals), not where it is the word", () => {
    const b = variantsBundle();
    b.entry.push({ resource: { resourceType: "Observation", id: "n-y", status: "final", code: { text: "Note" }, subject: { reference: "Patient/pt-variants" }, valueString: "Patient: Arnold Test. The test was negative; TEST repeated by Test." } } as never);
    expect(bundleToCase(b, opts).notes).toContain("Patient: [name]. The test was negative; [name] repeated by [name].");
  });
});

describe("helpers shared with DICOM header de-identification", () => {
  it("splitNameParts splits a written name (and a DICOM PN value) into the parts text may use alone", () => {
    expect(splitNameParts("Anna-Lena de Vries")).toEqual(["Anna-Lena", "Anna", "Lena", "de", "Vries"]);
    expect(splitNameParts("DOE^JANE^Q")).toEqual(["DOE", "JANE", "Q"]);
  });
});

describe("the patient pseudonym is keyed", () => {
  it("the same id and secret give the same pseudonym; another secret another one; never the unkeyed hash", () => {
    const a = patientPseudonym("440566", "secret-one-secret-one-secret-one-x");
    expect(patientPseudonym("440566", "secret-one-secret-one-secret-one-x")).toBe(a);
    expect(patientPseudonym("440566", "secret-two-secret-two-secret-two-x")).not.toBe(a);
    expect(a).toMatch(/^pt-[0-9a-f]{16}$/);
  });
});

describe("names the record writes outside a Patient, and ids that spell them (issue 53)", () => {
  const note = (id: string, text: string, subject: Record<string, unknown>) => ({ resource: { resourceType: "Observation", id, status: "final", code: { text: "Clinical note" }, subject, valueString: text } });

  it('"NAME: Doe, William" (a Soarian note): the family name, the comma and the given name are all the patient\'s', () => {
    expect(labelledNames("NAME: Doe, William   MRN: 0001")).toEqual(["Doe", "William"]);
    expect(labelledNames("Name: Smith, 45 year old")).toEqual(["Smith"]);
    // "TEST NAME: HEMOGLOBIN" is a field of a lab form, not the patient's name.
    expect(labelledNames("TEST NAME: HEMOGLOBIN A1C")).toEqual([]);
    const b = variantsBundle();
    const text = "ADMISSION NOTE\nNAME: Doe, William\nSeen by Dr. Kildare. William reports chest pain; W. Doe to return.";
    b.entry.push({ resource: { resourceType: "DocumentReference", id: "soarian", status: "current", type: { text: "Admission note" }, subject: { reference: "Patient/pt-variants" }, content: [{ attachment: { contentType: "text/plain", data: Buffer.from(text).toString("base64") } }] } } as never);
    const notes = bundleToCase(b, opts).notes!;
    expect(notes).toContain("  NAME: [name]\n  Seen by Dr. Kildare. [name] reports chest pain; [name] to return.");
  });

  it('a reference display "SMART, NANCY" with no Patient in the search answer: Nancy, Nancy Smart and Ms. Smart are scrubbed', () => {
    const subject = { reference: "Patient/12724066", display: "SMART, NANCY" };
    const b = {
      resourceType: "Bundle",
      type: "searchset",
      link: [{ relation: "self", url: "https://fhir-open.cerner.com/r4/ec2458f2-1e24-41c8-b71b-0e701af7583d/Condition?patient=12724066" }],
      entry: [
        { resource: { resourceType: "Condition", id: "p1", clinicalStatus: { coding: [{ code: "active" }] }, code: { text: "Asthma" }, subject } },
        note("n1", "Nancy Smart seen today. Ms. Smart denies fever; Nancy's inhaler renewed. N. Smart to follow up.", subject),
      ],
    };
    const c = bundleToCase(b, opts);
    expect(c.notes).toContain("[name] seen today. [name] denies fever; [name]'s inhaler renewed. [name] to follow up.");
    expect(JSON.stringify(c).toLowerCase()).not.toMatch(/nancy|smart/);
  });

  it("a resource id that spells the patient's name (UK Core) is opaque in the notes, the ignored list and the metadata; the export maps it back", () => {
    const id = "UKCore-Patient-RichardSmith-Example";
    const b = {
      resourceType: "Bundle",
      type: "collection",
      entry: [
        { resource: { resourceType: "Patient", id, name: [{ given: ["Richard"], family: "Smith" }], gender: "male", birthDate: "1970-01-01" } },
        { resource: { resourceType: "Condition", id: "UKCore-Condition-RichardSmith-Asthma", clinicalStatus: { coding: [{ code: "active" }] }, code: { text: "Asthma" }, subject: { reference: `Patient/${id}` }, note: [{ text: `See Patient/${id}` }] } },
        { resource: { resourceType: "Flag", id: "UKCore-Flag-RichardSmith", subject: { reference: `Patient/${id}` } } },
      ],
    };
    const c = bundleToCase(b, opts);
    const text = JSON.stringify({ notes: c.notes, ignored: (c.metadata!.fhir as Record<string, unknown>).ignoredResources, patient: (c.metadata!.fhir as Record<string, unknown>).patient });
    expect(text.toLowerCase()).not.toMatch(/richard|smith/);
    expect(c.notes).toMatch(/\[Condition\/id-[0-9a-f]{16}\] Asthma/);
    const pseudonyms = (c.metadata!.fhir as { pseudonyms: Record<string, string> }).pseudonyms;
    expect(Object.values(pseudonyms)).toEqual(expect.arrayContaining([`Patient/${id}`, "Condition/UKCore-Condition-RichardSmith-Asthma", "Flag/UKCore-Flag-RichardSmith"]));
  });
});

describe("the dates the service writes itself keep no birth date", () => {
  it("trend readings and 'since' phrases of a reading or a condition on the birth date are scrubbed like the record's text", () => {
    const born = "1940-09-05";
    const obs = (id: string, date: string, value: number) => ({ resource: { resourceType: "Observation", id, status: "final", category: [{ coding: [{ code: "laboratory" }] }], code: { coding: [{ system: "http://loinc.org", code: "4548-4" }], text: "HbA1c" }, subject: { reference: "Patient/p" }, effectiveDateTime: date, valueQuantity: { value, unit: "%" } } });
    const cond = (id: string, date: string) => ({ resource: { resourceType: "Condition", id, clinicalStatus: { coding: [{ code: "resolved" }] }, code: { text: "Otitis media" }, subject: { reference: "Patient/p" }, onsetDateTime: date } });
    const b = {
      resourceType: "Bundle",
      type: "collection",
      timestamp: "2026-12-01T00:00:00Z",
      entry: [
        { resource: { resourceType: "Patient", id: "p", birthDate: born, gender: "female" } },
        obs("o1", "2026-11-01", 8.1), obs("o2", "2025-11-01", 7.9), obs("o3", born, 7.5), obs("o4", "2024-11-01", 7.7), obs("o5", born, 7.2),
        cond("c1", "2020-01-01"), cond("c2", born),
      ],
    };
    const notes = bundleToCase(b, opts).notes!;
    expect(notes).toContain("HbA1c 8.1 %");
    expect(notes).toContain("[birth date]");
    expect(notes).not.toContain(born);
    expect(notes).not.toContain("1940");
  });
});

describe("phone numbers in the forms they are dialled", () => {
  it("a US number stated nationally is found E.164, with the trunk 1 and dotted; one stated E.164 nationally", async () => {
    const { scrubberFor } = await import("../../../../src/core/intake/fhir/deidentify.js");
    const us = scrubberFor([{ id: "p", telecom: [{ system: "phone", value: "(555) 010-9977" }] }], []);
    expect(us.text("call +15550109977 or 1-555-010-9977 or 555.010.9977; QT 400 ms")).toBe("call [contact] or [contact] or [contact]; QT 400 ms");
    const nl = scrubberFor([{ id: "p", telecom: [{ system: "phone", value: "+31 20 123 4567" }] }], []);
    expect(nl.text("tel 020-123 4567, 0031 20 1234567, +31201234567")).toBe("tel [contact], [contact], [contact]");
  });
});
