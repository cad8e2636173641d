import { fhirPath, type FhirIssue } from "./fhir-error.js";

/**
 * Which FHIR version a bundle's resources are written in, read from their shape: resource
 * types that exist only in another version, and elements R4 renamed or retyped. A client
 * that sends STU3 or DSTU2 gets one message naming the version, not a hundred element errors.
 */
type Version = "DSTU2" | "STU3" | "R5";

/** Resource types no R4 server knows, by the version that has them. */
const TYPES: Record<string, Version> = {
  MedicationOrder: "DSTU2",
  DiagnosticOrder: "DSTU2",
  Order: "DSTU2",
  OrderResponse: "DSTU2",
  DeviceUseRequest: "DSTU2",
  Supply: "DSTU2",
  Conformance: "DSTU2",
  ProcedureRequest: "STU3",
  ReferralRequest: "STU3",
  DeviceComponent: "STU3",
  EligibilityRequest: "STU3",
  EligibilityResponse: "STU3",
  EnrollmentRequest: "STU3",
  ProcessRequest: "STU3",
  ProcessResponse: "STU3",
  DataElement: "STU3",
  Sequence: "STU3",
  ImagingManifest: "STU3",
  ImagingSelection: "R5",
  NutritionIntake: "R5",
  Transport: "R5",
  Permission: "R5",
  InventoryItem: "R5",
  ArtifactAssessment: "R5",
  Requirements: "R5",
};

/** Elements of a resource type that mark a version: present (or, with `string`, written as a plain code). */
const ELEMENTS: Array<{ type: string; element: string; version: Version; string?: true; why: string }> = [
  { type: "Condition", element: "patient", version: "DSTU2", why: "Condition.patient is DSTU2 (R4: subject)" },
  { type: "Condition", element: "dateRecorded", version: "DSTU2", why: "Condition.dateRecorded is DSTU2 (R4: recordedDate)" },
  { type: "Encounter", element: "patient", version: "DSTU2", why: "Encounter.patient is DSTU2 (R4: subject)" },
  { type: "Immunization", element: "wasNotGiven", version: "DSTU2", why: "Immunization.wasNotGiven is DSTU2 (R4: status not-done)" },
  { type: "Condition", element: "clinicalStatus", version: "STU3", string: true, why: "Condition.clinicalStatus is a code in STU3 (R4: CodeableConcept)" },
  { type: "Condition", element: "verificationStatus", version: "STU3", string: true, why: "Condition.verificationStatus is a code in STU3 (R4: CodeableConcept)" },
  { type: "Condition", element: "assertedDate", version: "STU3", why: "Condition.assertedDate is STU3 (R4: recordedDate)" },
  { type: "AllergyIntolerance", element: "clinicalStatus", version: "STU3", string: true, why: "AllergyIntolerance.clinicalStatus is a code in STU3 (R4: CodeableConcept)" },
  { type: "AllergyIntolerance", element: "verificationStatus", version: "STU3", string: true, why: "AllergyIntolerance.verificationStatus is a code in STU3 (R4: CodeableConcept)" },
  { type: "AllergyIntolerance", element: "assertedDate", version: "STU3", why: "AllergyIntolerance.assertedDate is STU3 (R4: recordedDate)" },
  { type: "MedicationStatement", element: "taken", version: "STU3", why: "MedicationStatement.taken is STU3 (R4 records this in status)" },
  { type: "MedicationRequest", element: "context", version: "STU3", why: "MedicationRequest.context is STU3 (R4: encounter)" },
  { type: "Observation", element: "context", version: "STU3", why: "Observation.context is STU3 (R4: encounter)" },
  { type: "DiagnosticReport", element: "context", version: "STU3", why: "DiagnosticReport.context is STU3 (R4: encounter)" },
  { type: "Procedure", element: "context", version: "STU3", why: "Procedure.context is STU3 (R4: encounter)" },
  { type: "Immunization", element: "notGiven", version: "STU3", why: "Immunization.notGiven is STU3 (R4: status not-done)" },
  { type: "Immunization", element: "date", version: "STU3", why: "Immunization.date is STU3 (R4: occurrenceDateTime)" },
];

/** Each version's name as messages give it. */
const NAMES: Record<Version, string> = { DSTU2: "DSTU2 (1.0)", STU3: "STU3 (3.0)", R5: "R5 (5.0)" };

/** The first sign per version; DSTU2 outranks STU3 (both share some STU3-era shapes), R5 is reported as such. */
export function otherVersion(entries: ReadonlyArray<{ at: string; resource: Record<string, unknown> }>, bundle: Record<string, unknown>): FhirIssue | null {
  const found: Partial<Record<Version, FhirIssue>> = {};
  const note = (v: Version, issue: FhirIssue) => void (found[v] ??= issue);
  if ("issues" in bundle) note("R5", { path: "Bundle.issues", message: "Bundle.issues is an R5 element", fhirCode: "not-supported" });
  for (const { at, resource } of entries) {
    if (typeof resource.resourceType !== "string") continue; // the envelope check names it
    const type = resource.resourceType;
    const byType = TYPES[type];
    if (byType) note(byType, { path: fhirPath(at, ["resourceType"]), message: `${type.slice(0, 64)} is a FHIR ${NAMES[byType]} resource type`, fhirCode: "not-supported" });
    for (const e of ELEMENTS) {
      if (e.type !== type || !(e.element in resource)) continue;
      if (e.string && typeof resource[e.element] !== "string") continue;
      note(e.version, { path: fhirPath(at, [e.element]), message: e.why, fhirCode: "not-supported" });
    }
    if (found.DSTU2) break;
  }
  const v: Version | undefined = found.DSTU2 ? "DSTU2" : found.STU3 ? "STU3" : found.R5 ? "R5" : undefined;
  if (!v) return null;
  const sign = found[v]!;
  return { ...sign, message: `this is a FHIR ${NAMES[v]} Bundle, not R4: ${sign.message}; send FHIR R4 (4.0.1)` };
}
