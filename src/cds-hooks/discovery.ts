/** CDS Hooks 2.0: the one service medmmv offers, as its discovery document lists it. */
export const SERVICE_ID = "medmmv-diagnosis";
export const HOOK = "patient-view";

/**
 * What the EHR should send with each call (prefetch templates, CDS Hooks §prefetch): the
 * patient, active conditions, recent observations, medications and allergies.
 */
export const PREFETCH: Record<string, string> = {
  patient: "Patient/{{context.patientId}}",
  conditions: "Condition?patient={{context.patientId}}&clinical-status=active",
  observations: "Observation?patient={{context.patientId}}&_sort=-date&_count=100",
  medicationStatements: "MedicationStatement?patient={{context.patientId}}&status=active&_include=MedicationStatement:medication",
  medicationRequests: "MedicationRequest?patient={{context.patientId}}&status=active&_include=MedicationRequest:medication",
  allergies: "AllergyIntolerance?patient={{context.patientId}}",
};

export interface DiscoveryService {
  hook: string;
  id: string;
  title: string;
  description: string;
  prefetch: Record<string, string>;
  usageRequirements?: string;
}

export function discoveryDocument(): { services: DiscoveryService[] } {
  return {
    services: [
      {
        hook: HOOK,
        id: SERVICE_ID,
        title: "medmmv verifiable diagnostic reasoning",
        description:
          "Reads the patient's record (prefetch), runs medmmv's evidence-checked reasoning on 'What is the most likely diagnosis?', and answers with a card linking to the audit view of the evidence behind it. Decision support for clinicians; not a diagnosis.",
        prefetch: PREFETCH,
        usageRequirements: "Send the prefetch, or a fhirServer on the service's allow-list (MEDMMV_FHIR_SERVERS) with fhirAuthorization.",
      },
    ],
  };
}
