import { describe, expect, it } from "vitest";
import { bundleToCase } from "../../../../src/core/intake/fhir/bundle-to-case.js";
import { OTHER_PATIENT_REASON } from "../../../../src/core/intake/fhir/one-patient.js";
import { isMedmmvError } from "../../../../src/core/contracts/errors.js";

const opts = { maxImageBytes: 1_000_000, now: new Date("2026-12-01T00:00:00Z") };
const OTHERS = "Metastatic pancreatic carcinoma";

const condition = (id: string, patient: string, text: string) => ({ resourceType: "Condition", id, clinicalStatus: { coding: [{ code: "active" }] }, code: { text }, subject: { reference: patient } });
const patient = { resourceType: "Patient", id: "12724066", gender: "female", birthDate: "1961-04-02", identifier: [{ system: "urn:oid:2.2.2", value: "MRN-118822" }] };

/** The patient's own condition and another patient's, as each bundle type carries them. */
function bundleOf(type: string, withPatient: boolean): Record<string, unknown> {
  const resources = [...(withPatient ? [patient] : []), condition("c-own", "Patient/12724066", "Type 2 diabetes mellitus"), condition("c-other", "Patient/9279171", OTHERS)];
  const entry = resources.map((r) => ({
    fullUrl: `https://fhir.example.org/r4/${r.resourceType}/${r.id}`,
    resource: r,
    ...(type === "searchset" ? { search: { mode: "match" } } : {}),
    ...(type === "transaction" || type === "batch" ? { request: { method: "PUT", url: `${r.resourceType}/${r.id}` } } : {}),
    ...(type === "history" ? { request: { method: "PUT", url: `${r.resourceType}/${r.id}` }, response: { status: "200" } } : {}),
  }));
  return { resourceType: "Bundle", type, ...(type === "searchset" ? { link: [{ relation: "self", url: "https://fhir.example.org/r4/Condition?patient=12724066" }] } : {}), entry };
}

describe("one patient per case, whatever the bundle type", () => {
  it.each(["searchset", "collection", "transaction", "batch", "history"])("a %s holding another patient's Condition leaves it out of the notes and says so", (type) => {
    for (const withPatient of [true, false]) {
      if (!withPatient && type !== "searchset") continue; // without a Patient only a search's self link names whose record it is
      const c = bundleToCase(bundleOf(type, withPatient), opts);
      expect(c.notes).toContain("Type 2 diabetes mellitus");
      expect(JSON.stringify(c)).not.toContain(OTHERS);
      const ignored = (c.metadata!.fhir as { ignoredResources: Array<{ resource: string; reason: string }> }).ignoredResources;
      // Named by type and position, never by an id that may be the other patient's.
      expect(ignored.filter((i) => i.reason === OTHER_PATIENT_REASON).map((i) => i.resource)).toEqual([expect.stringMatching(/^Condition \(Bundle\.entry\[\d+\]\)$/)]);
    }
  });

  it("a search link's `_id` names the patient only in a search of Patients (`Condition?_id=` names a condition)", () => {
    const own = (id: string, text: string) => ({ fullUrl: `https://fhir.example.org/r4/Condition/${id}`, resource: condition(id, "Patient/12724066", text), search: { mode: "match" } });
    const b = { resourceType: "Bundle", type: "searchset", link: [{ relation: "self", url: "https://fhir.example.org/r4/Condition?_id=c-1" }], entry: [own("c-1", "Type 2 diabetes mellitus")] };
    const c = bundleToCase(b, opts);
    expect(c.notes).toContain("Type 2 diabetes mellitus");
  });

  it("the caller's patient (a CDS hook's context) decides when the record holds no Patient", () => {
    const b = bundleOf("collection", false);
    const c = bundleToCase(b, { ...opts, patientId: "9279171" });
    expect(c.notes).toContain(OTHERS);
    expect(c.notes).not.toContain("Type 2 diabetes");
  });

  it("resources of two patients and nothing to say whose record it is: refused naming both", () => {
    const err = (() => {
      try {
        bundleToCase(bundleOf("collection", false), opts);
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(isMedmmvError(err) && err.code).toBe("UNPROCESSABLE");
    expect((err as Error).message).toMatch(/two patients \(Patient\/12724066 .*Patient\/9279171/);
  });

  it("two Patients that are not one person refuse the record naming both; linked or sharing an identifier they are one", () => {
    const second = { resourceType: "Patient", id: "9279171", gender: "male" };
    const b = bundleOf("searchset", true);
    (b.entry as unknown[]).push({ resource: second });
    expect(() => bundleToCase(b, opts)).toThrow(/two Patients who are not the same person: Patient\/12724066 .* and Patient\/9279171/);
    const linked = bundleOf("collection", true);
    (linked.entry as unknown[]).push({ resource: { ...second, link: [{ other: { reference: "Patient/12724066" }, type: "seealso" }] } });
    const c = bundleToCase(linked, opts);
    expect(c.notes).toContain(OTHERS); // Patient/9279171 is the same person: their condition is theirs
    const shared = bundleOf("collection", true);
    (shared.entry as unknown[]).push({ resource: { ...second, identifier: [{ system: "urn:oid:2.2.2", value: "MRN-118822" }] } });
    expect(bundleToCase(shared, opts).notes).toContain(OTHERS);
  });

  it("a reference by identifier to someone else is another patient too", () => {
    const b = bundleOf("collection", true);
    (b.entry as Array<{ resource: Record<string, unknown> }>)[2]!.resource.subject = { identifier: { system: "urn:oid:2.2.2", value: "MRN-999" } };
    expect(bundleToCase(b, opts).notes).not.toContain(OTHERS);
  });
});
