/**
 * The only words of a DICOM object's header that reach an agent: modality, body part, the
 * study description with every name and number taken out, the patient's age and sex. This
 * is an allow-list — nothing else of the header (names, ids, dates, UIDs, institutions,
 * physicians, addresses: the PS3.15 basic-profile attributes) is ever read into the case.
 */

/** Attributes whose values are person names or identifiers, removed from the free text too. */
const IDENTIFYING = [
  "PatientName", "PatientID", "OtherPatientIDs", "OtherPatientNames", "PatientBirthName", "PatientMotherBirthName",
  "ReferringPhysicianName", "PerformingPhysicianName", "OperatorsName", "NameOfPhysiciansReadingStudy",
  "PhysiciansOfRecord", "RequestingPhysician", "InstitutionName", "InstitutionAddress", "AccessionNumber",
  "StudyID", "PatientAddress", "PatientTelephoneNumbers", "InstitutionalDepartmentName", "StationName",
  "ResponsiblePerson", "IssuerOfPatientID", "MedicalRecordLocator", "PatientInsurancePlanCodeSequence",
];

/** Every attribute deidentifiedContext reads (the decoder sends back these, and no others). */
export const CONTEXT_ATTRIBUTES: readonly string[] = ["Modality", "BodyPartExamined", "StudyDescription", "PatientAge", "PatientSex", ...IDENTIFYING];

const CODE_STRING = /^[A-Z0-9 _]{1,16}$/;

function text(v: unknown): string | undefined {
  const first = Array.isArray(v) ? v[0] : v;
  if (typeof first === "string") return first;
  if (first && typeof first === "object" && "Alphabetic" in first) return String((first as { Alphabetic: unknown }).Alphabetic ?? "");
  return undefined;
}

/** Every word (≥ 2 letters) of every identifying value, lower-cased. */
function identifyingWords(elements: Record<string, unknown>): Set<string> {
  const words = new Set<string>();
  for (const name of IDENTIFYING) {
    const values = Array.isArray(elements[name]) ? (elements[name] as unknown[]) : [elements[name]];
    for (const v of values) {
      const s = text([v]);
      if (!s) continue;
      for (const w of s.split(/[^\p{L}\p{N}]+/u)) if (w.length >= 2) words.add(w.toLowerCase());
    }
  }
  return words;
}

/** Free text with identifying words, digit runs (ids, dates) and name-like `^` forms removed. */
export function stripIdentifiers(s: string, elements: Record<string, unknown>): string {
  const words = identifyingWords(elements);
  return s
    .replace(/\S*\^\S*/g, " ") // DICOM person-name syntax, wherever it appears
    .split(/(\s+)/)
    .map((tok) => {
      const bare = tok.replace(/[^\p{L}\p{N}]+/gu, "").toLowerCase();
      if (bare && words.has(bare)) return "";
      if (/\d{3,}/.test(tok)) return ""; // ids, dates, phone numbers
      return tok;
    })
    .join("")
    .replace(/\s+/g, " ")
    .trim()
    .slice(0, 120);
}

/** "CT · chest · study: CT chest with contrast · 54 y · F", or "" when the object says nothing usable. */
export function deidentifiedContext(elements: Record<string, unknown>): string {
  const parts: string[] = [];
  const modality = text(elements.Modality);
  if (modality && CODE_STRING.test(modality)) parts.push(modality);
  const bodyPart = text(elements.BodyPartExamined);
  if (bodyPart && CODE_STRING.test(bodyPart)) parts.push(`body part ${bodyPart.toLowerCase()}`);
  const study = text(elements.StudyDescription);
  const cleaned = study ? stripIdentifiers(study, elements) : "";
  if (cleaned) parts.push(`study: ${cleaned}`);
  const age = /^(\d{3})([DWMY])$/.exec(text(elements.PatientAge) ?? "");
  if (age) parts.push(`${Number(age[1])} ${{ D: "days", W: "weeks", M: "months", Y: "y" }[age[2] as "D"]}`);
  const sex = text(elements.PatientSex);
  if (sex === "M" || sex === "F" || sex === "O") parts.push(`sex ${sex}`);
  return parts.join(" · ");
}
