import { z } from "zod";
import type { ClinicalCase } from "./clinical-case.js";

/** A resource (or part of one) a case built from a FHIR Bundle does not use, and why. */
export const IgnoredResource = z.object({ resource: z.string(), reason: z.string() });
export type IgnoredResource = z.infer<typeof IgnoredResource>;

/**
 * How a record's notes were fitted to the notes budget (MEDMMV_FHIR_NOTES_BUDGET, in
 * characters), per resource type: what the audit view shows under provenance.
 */
export const FhirNotesSummary = z.object({
  budget: z.number().int(),
  chars: z.number().int(),
  /** Folded into another line: earlier readings of a trend, repeated visits or refills, lab panels shown through their results. */
  summarised: z.record(z.string(), z.number().int()),
  /** Left out: their lines did not fit the budget. */
  leftOut: z.record(z.string(), z.number().int()),
  /** Reports and documents whose text repeats one already in the notes. */
  duplicates: z.record(z.string(), z.number().int()),
});
export type FhirNotesSummary = z.infer<typeof FhirNotesSummary>;

/**
 * What a case built from a FHIR Bundle keeps about its origin, in `metadata.fhir`: enough
 * to point results back at the record (the Patient, what was left out) without the bundle.
 */
export const FhirOrigin = z.object({
  bundleId: z.string().optional(),
  bundleType: z.string(),
  patient: z.string().optional(),
  referenceDate: z.string(),
  resources: z.number().int(),
  ignoredResources: z.array(IgnoredResource),
  notes: FhirNotesSummary.optional(),
  /** Pseudonymous resource names the notes use → the names the EHR knows (for the export back). */
  pseudonyms: z.record(z.string(), z.string()).optional(),
  /** FHIRPath of the attachment each image came from, by image id: image refusals name it. */
  imagePaths: z.record(z.string(), z.string()).optional(),
});
export type FhirOrigin = z.infer<typeof FhirOrigin>;

/** The FHIR origin of a case, or null for cases sent as ClinicalCase JSON. */
export function fhirOrigin(c: Pick<ClinicalCase, "metadata">): FhirOrigin | null {
  const parsed = FhirOrigin.safeParse(c.metadata?.fhir);
  return parsed.success ? parsed.data : null;
}

/** `provenance.ignoredResources` and `provenance.fhirNotes` of a result, present only for FHIR cases. */
export function fhirIgnoredResources(c: Pick<ClinicalCase, "metadata">): { ignoredResources?: FhirOrigin["ignoredResources"]; fhirNotes?: FhirNotesSummary } {
  const origin = fhirOrigin(c);
  return origin ? { ignoredResources: origin.ignoredResources, ...(origin.notes ? { fhirNotes: origin.notes } : {}) } : {};
}
