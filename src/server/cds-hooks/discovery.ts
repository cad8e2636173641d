import { z } from "zod";

/** CDS Hooks 2.0: the one service medmmv offers, as its discovery document lists it. */
export const SERVICE_ID = "medmmv-diagnosis";
export const HOOK = "patient-view";

/**
 * What the EHR should send with each call (prefetch templates, CDS Hooks §prefetch): the
 * patient, active conditions, recent observations, medications and allergies. Every
 * template stays inside 2.0.1's prefetch query restrictions (an instance read, or a type
 * search by patient reference, token equality, `_count` and `_sort`): no `_include`, which
 * an EHR need not support. A medication named only by reference is then read by the
 * reference's `display`.
 */
export const PREFETCH: Record<string, string> = {
  patient: "Patient/{{context.patientId}}",
  conditions: "Condition?patient={{context.patientId}}&clinical-status=active",
  observations: "Observation?patient={{context.patientId}}&_sort=-date&_count=100",
  medicationStatements: "MedicationStatement?patient={{context.patientId}}&status=active",
  medicationRequests: "MedicationRequest?patient={{context.patientId}}&status=active",
  allergies: "AllergyIntolerance?patient={{context.patientId}}",
};

/** The discovery document (GET /cds-services), as the route answers and documents it. */
export const Discovery = z
  .object({
    services: z.array(z.object({ hook: z.string(), id: z.string(), title: z.string(), description: z.string(), prefetch: z.record(z.string(), z.string()), usageRequirements: z.string().optional() })),
  })
  .describe("CdsDiscovery");
export type Discovery = z.infer<typeof Discovery>;

export function discoveryDocument(): Discovery {
  return {
    services: [
      {
        hook: HOOK,
        id: SERVICE_ID,
        title: "medmmv verifiable diagnostic reasoning",
        description:
          "Reads the patient's record (prefetch), runs medmmv's evidence-checked reasoning on 'What is the most likely diagnosis?', and answers with a card linking to the audit view of the evidence behind it. Decision support for clinicians; not a diagnosis.",
        prefetch: PREFETCH,
        usageRequirements: "Send the prefetch (null for a key with no data), or a fhirServer on the service's allow-list (MEDMMV_FHIR_SERVERS) with fhirAuthorization. Without the Patient, and no way to fetch it, the call is answered 412.",
      },
    ],
  };
}
