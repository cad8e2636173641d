import { fixtureBundle } from "../../core/intake/fhir/fhir-fixtures.js";

/** The synthetic STEMI record as an EHR prefetches it for the discovery document's keys: a resource and searchset bundles. */
export function stemiPrefetch(): Record<string, unknown> {
  const r = fixtureBundle("stemi").entry.map((e) => e.resource);
  const search = (...types: string[]) => ({ resourceType: "Bundle", type: "searchset", entry: r.filter((x) => types.includes(x.resourceType as string)).map((resource) => ({ resource })) });
  return {
    patient: r.find((x) => x.resourceType === "Patient"),
    conditions: search("Condition"),
    observations: search("Observation"),
    medicationStatements: search("MedicationStatement", "Medication"),
    medicationRequests: search("MedicationRequest"),
    allergies: search("AllergyIntolerance"),
  };
}
