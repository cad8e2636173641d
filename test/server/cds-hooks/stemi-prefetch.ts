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

/**
 * The STEMI prefetch whose observations search also carries, as included resources, an
 * ImagingStudy `id` of study `studyUid` (an Observation's derivedFrom) and its Endpoint at the
 * DICOMweb `root`.
 */
export function stemiPrefetchWithStudy(root: string, o: { id?: string; studyUid?: string } = {}): Record<string, unknown> {
  const p = stemiPrefetch() as Record<string, { entry?: unknown[] }>;
  const include = { mode: "include" };
  return {
    ...p,
    observations: {
      ...p.observations,
      entry: [
        ...(p.observations?.entry ?? []),
        { search: include, resource: { resourceType: "ImagingStudy", id: o.id ?? "ct1", status: "available", subject: { reference: "Patient/stemi-1" }, identifier: [{ system: "urn:dicom:uid", value: `urn:oid:${o.studyUid ?? "2.25.7"}` }], modality: [{ code: "CT" }], endpoint: [{ reference: "Endpoint/pacs" }] } },
        { search: include, resource: { resourceType: "Endpoint", id: "pacs", status: "active", connectionType: { system: "http://terminology.hl7.org/CodeSystem/endpoint-connection-type", code: "dicom-wado-rs" }, payloadType: [{ text: "DICOM" }], address: root } },
      ],
    },
  };
}
