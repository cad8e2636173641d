import { describe, expect, it } from "vitest";
import { bundleToCase } from "../../../../src/core/intake/fhir/bundle-to-case.js";

const opts = { maxImageBytes: 1_000_000 };
const patient = { resourceType: "Patient", id: "p-1", gender: "female" };

describe("a choice element given twice", () => {
  it("is left out and named (mCODE's HER2 ratio as a Quantity and a Ratio); the rest of the resource is read", () => {
    const her2 = {
      resourceType: "Observation",
      id: "her2",
      status: "final",
      code: { text: "HER2 [Ratio]" },
      subject: { reference: "Patient/p-1" },
      effectiveDateTime: "2026-10-01",
      valueQuantity: { value: 2.4 },
      valueRatio: { numerator: { value: 1.1 }, denominator: { value: 1 } },
      component: [{ code: { text: "ER" }, valueCodeableConcept: { text: "Negative" }, valueString: "Positive" }],
    };
    const c = bundleToCase({ resourceType: "Bundle", type: "collection", entry: [{ resource: patient }, { resource: her2 }] }, opts);
    expect(c.notes).toContain("[Observation/her2] HER2 [Ratio] (no value)");
    expect(c.notes).not.toMatch(/2\.4|1\.1|Positive|Negative/);
    const ignored = (c.metadata!.fhir as { ignoredResources: Array<{ resource: string; reason: string }> }).ignoredResources;
    expect(ignored).toContainEqual({ resource: "Observation/her2", reason: "value[x] is given twice (valueQuantity, valueRatio); R4 allows one value: that element is not read" });
    expect(ignored).toContainEqual({ resource: "Observation/her2", reason: "component[0].value[x] is given twice (valueCodeableConcept, valueString); R4 allows one value: that element is not read" });
  });
});

describe("entries without a resource", () => {
  it("are named in the refusal of a record that holds nothing else", () => {
    const b = { resourceType: "Bundle", type: "transaction", entry: [{ resource: patient, request: { method: "PUT", url: "Patient/p-1" } }, { request: { method: "DELETE", url: "Condition/c-1" } }, { fullUrl: "urn:uuid:9b1e3c7a-0a4e-4c55-9f5e-3e2f6c1d2a10" }] };
    expect(() => bundleToCase(b, opts)).toThrow(/2 entries have no resource and were skipped \(Bundle\.entry\[1\] \(DELETE Condition\/c-1\), Bundle\.entry\[2\] \(no request\)\)/);
  });
});
