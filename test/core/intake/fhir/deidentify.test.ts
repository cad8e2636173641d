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
    expect(line).toMatch(/the record reads \[(name|birth date|contact|identifier|address)\]( \[(name|address)\])?\.? here/);
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
    expect(notes).toContain("Patiënt: [name] [name]. Verder: [name] belt morgen.");
  });
});

describe("a learned name that is also a word", () => {
  it("is scrubbed where it is written as a name (capitalised, capitals), not where it is the word", () => {
    const b = variantsBundle();
    b.entry.push({ resource: { resourceType: "Observation", id: "n-y", status: "final", code: { text: "Note" }, subject: { reference: "Patient/pt-variants" }, valueString: "Patient: Arnold Test. The test was negative; TEST repeated by Test." } } as never);
    expect(bundleToCase(b, opts).notes).toContain("Patient: [name] [name]. The test was negative; [name] repeated by [name].");
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
