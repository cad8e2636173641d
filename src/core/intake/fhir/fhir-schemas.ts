import type * as R4 from "fhir/r4.js";
import { z } from "zod";

/**
 * zod schemas for the parts of FHIR R4 resources that medmmv reads, nothing more: other
 * elements pass unread. Each schema is checked at compile time against the @types/fhir R4
 * definition (`r4<T>()`), so what validation lets through is a value the R4 types accept.
 */
function r4<T>() {
  return <S extends z.ZodType<Partial<T>>>(schema: S): S => schema;
}

/** FHIR `id`: 1–64 letters, digits, '-' and '.'. */
export const FHIR_ID = /^[A-Za-z0-9\-.]{1,64}$/;
/** FHIR date / dateTime / instant, any precision from a year to fractional seconds with zone. */
const DATE_TIME = /^\d{4}(-(0[1-9]|1[0-2])(-(0[1-9]|[12]\d|3[01])(T([01]\d|2[0-3]):[0-5]\d(:([0-5]\d|60)(\.\d+)?)?(Z|[+-]((0\d|1[0-3]):[0-5]\d|14:00))?)?)?)?$/;
const DATE = /^\d{4}(-(0[1-9]|1[0-2])(-(0[1-9]|[12]\d|3[01]))?)?$/;

const text = (max = 20_000) => z.string().max(max);
export const FhirDateTime = z.string().regex(DATE_TIME, "must be a FHIR dateTime (YYYY, YYYY-MM, YYYY-MM-DD or YYYY-MM-DDThh:mm:ss+zz:zz)");
export const FhirDate = z.string().regex(DATE, "must be a FHIR date (YYYY, YYYY-MM or YYYY-MM-DD)");

export const Coding = r4<R4.Coding>()(z.object({ system: text(1000).optional(), code: text(1000).optional(), display: text(1000).optional() }));
export const CodeableConcept = r4<R4.CodeableConcept>()(z.object({ coding: z.array(Coding).max(50).optional(), text: text().optional() }));
export const Quantity = r4<R4.Quantity>()(
  z.object({
    value: z.number({ error: "must be a number" }).optional(),
    comparator: z.enum(["<", "<=", ">=", ">"]).optional(),
    unit: text(200).optional(),
    system: text(1000).optional(),
    code: text(200).optional(),
  }),
);
export const Range = r4<R4.Range>()(z.object({ low: Quantity.optional(), high: Quantity.optional() }));
export const Ratio = r4<R4.Ratio>()(z.object({ numerator: Quantity.optional(), denominator: Quantity.optional() }));
export const Period = r4<R4.Period>()(z.object({ start: FhirDateTime.optional(), end: FhirDateTime.optional() }));
export const Reference = r4<R4.Reference>()(z.object({ reference: text(2000).optional(), type: text(200).optional(), display: text(2000).optional() }));
export const Attachment = r4<R4.Attachment>()(
  z.object({ contentType: text(200).optional(), data: z.string().optional(), url: text(4000).optional(), title: text(2000).optional(), creation: FhirDateTime.optional() }),
);
export const Annotation = r4<R4.Annotation>()(z.object({ text: text() }));

/** The value[x] choices of Observation and its components that are rendered. */
const observationValue = {
  valueQuantity: Quantity.optional(),
  valueCodeableConcept: CodeableConcept.optional(),
  valueString: text().optional(),
  valueBoolean: z.boolean().optional(),
  valueInteger: z.number().int().optional(),
  valueRange: Range.optional(),
  valueRatio: Ratio.optional(),
  valueDateTime: FhirDateTime.optional(),
  valuePeriod: Period.optional(),
  dataAbsentReason: CodeableConcept.optional(),
  interpretation: z.array(CodeableConcept).max(20).optional(),
  referenceRange: z.array(z.object({ low: Quantity.optional(), high: Quantity.optional(), text: text(1000).optional() })).max(20).optional(),
};

/**
 * A resource's id: any non-empty string is read. One that is not an R4 id (Epic's 109-character
 * Medication ids) degrades only its name, listed in the case's ignored resources (bundle-index.ts).
 */
const base = { id: z.string().min(1, "an id must not be empty").max(4000).optional() };
const bundleId = z.string().regex(FHIR_ID, "must be a FHIR id (1–64 letters, digits, '-' or '.')").optional();

export const Patient = r4<R4.Patient>()(
  z.object({
    ...base,
    resourceType: z.literal("Patient"),
    birthDate: FhirDate.optional(),
    gender: z.enum(["male", "female", "other", "unknown"]).optional(),
    deceasedBoolean: z.boolean().optional(),
    deceasedDateTime: FhirDateTime.optional(),
  }),
);

export const Condition = r4<R4.Condition>()(
  z.object({
    ...base,
    resourceType: z.literal("Condition"),
    clinicalStatus: CodeableConcept.optional(),
    verificationStatus: CodeableConcept.optional(),
    severity: CodeableConcept.optional(),
    code: CodeableConcept.optional(),
    subject: Reference,
    onsetDateTime: FhirDateTime.optional(),
    onsetString: text(1000).optional(),
    onsetAge: Quantity.optional(),
    abatementDateTime: FhirDateTime.optional(),
    recordedDate: FhirDateTime.optional(),
    note: z.array(Annotation).max(20).optional(),
  }),
);

export const Observation = r4<R4.Observation>()(
  z.object({
    ...base,
    resourceType: z.literal("Observation"),
    status: z.enum(["registered", "preliminary", "final", "amended", "corrected", "cancelled", "entered-in-error", "unknown"]),
    category: z.array(CodeableConcept).max(20).optional(),
    code: CodeableConcept,
    subject: Reference.optional(),
    effectiveDateTime: FhirDateTime.optional(),
    effectivePeriod: Period.optional(),
    effectiveInstant: FhirDateTime.optional(),
    issued: FhirDateTime.optional(),
    ...observationValue,
    component: z.array(z.object({ code: CodeableConcept, ...observationValue })).max(50).optional(),
    hasMember: z.array(Reference).max(200).optional(),
    note: z.array(Annotation).max(20).optional(),
  }),
);

const dosageText = z.array(z.object({ text: text(2000).optional() })).max(20).optional();

export const MedicationStatement = r4<R4.MedicationStatement>()(
  z.object({
    ...base,
    resourceType: z.literal("MedicationStatement"),
    status: z.enum(["active", "completed", "entered-in-error", "intended", "stopped", "on-hold", "unknown", "not-taken"]),
    medicationCodeableConcept: CodeableConcept.optional(),
    medicationReference: Reference.optional(),
    subject: Reference,
    effectiveDateTime: FhirDateTime.optional(),
    effectivePeriod: Period.optional(),
    dateAsserted: FhirDateTime.optional(),
    dosage: dosageText,
  }),
);

export const MedicationRequest = r4<R4.MedicationRequest>()(
  z.object({
    ...base,
    resourceType: z.literal("MedicationRequest"),
    status: z.enum(["active", "on-hold", "cancelled", "completed", "entered-in-error", "stopped", "draft", "unknown"]),
    intent: z.enum(["proposal", "plan", "order", "original-order", "reflex-order", "filler-order", "instance-order", "option"]),
    medicationCodeableConcept: CodeableConcept.optional(),
    medicationReference: Reference.optional(),
    subject: Reference,
    authoredOn: FhirDateTime.optional(),
    dosageInstruction: dosageText,
  }),
);

export const Medication = r4<R4.Medication>()(z.object({ ...base, resourceType: z.literal("Medication"), code: CodeableConcept.optional() }));

export const AllergyIntolerance = r4<R4.AllergyIntolerance>()(
  z.object({
    ...base,
    resourceType: z.literal("AllergyIntolerance"),
    clinicalStatus: CodeableConcept.optional(),
    verificationStatus: CodeableConcept.optional(),
    type: z.enum(["allergy", "intolerance"]).optional(),
    category: z.array(z.enum(["food", "medication", "environment", "biologic"])).max(4).optional(),
    criticality: z.enum(["low", "high", "unable-to-assess"]).optional(),
    code: CodeableConcept.optional(),
    patient: Reference,
    onsetDateTime: FhirDateTime.optional(),
    recordedDate: FhirDateTime.optional(),
    reaction: z
      .array(z.object({ manifestation: z.array(CodeableConcept).min(1).max(20), description: text(2000).optional(), severity: z.enum(["mild", "moderate", "severe"]).optional() }))
      .max(20)
      .optional(),
  }),
);

export const Procedure = r4<R4.Procedure>()(
  z.object({
    ...base,
    resourceType: z.literal("Procedure"),
    status: z.enum(["preparation", "in-progress", "not-done", "on-hold", "stopped", "completed", "entered-in-error", "unknown"]),
    code: CodeableConcept.optional(),
    subject: Reference,
    performedDateTime: FhirDateTime.optional(),
    performedPeriod: Period.optional(),
    outcome: CodeableConcept.optional(),
    note: z.array(Annotation).max(20).optional(),
  }),
);

export const DiagnosticReport = r4<R4.DiagnosticReport>()(
  z.object({
    ...base,
    resourceType: z.literal("DiagnosticReport"),
    status: z.enum(["registered", "partial", "preliminary", "final", "amended", "corrected", "appended", "cancelled", "entered-in-error", "unknown"]),
    category: z.array(CodeableConcept).max(20).optional(),
    code: CodeableConcept,
    subject: Reference.optional(),
    effectiveDateTime: FhirDateTime.optional(),
    effectivePeriod: Period.optional(),
    issued: FhirDateTime.optional(),
    result: z.array(Reference).max(200).optional(),
    media: z.array(z.object({ comment: text(2000).optional(), link: Reference })).max(16).optional(),
    conclusion: text().optional(),
    conclusionCode: z.array(CodeableConcept).max(20).optional(),
    presentedForm: z.array(Attachment).max(16).optional(),
  }),
);

export const DocumentReference = r4<R4.DocumentReference>()(
  z.object({
    ...base,
    resourceType: z.literal("DocumentReference"),
    status: z.enum(["current", "superseded", "entered-in-error"]),
    type: CodeableConcept.optional(),
    subject: Reference.optional(),
    date: FhirDateTime.optional(),
    description: text(2000).optional(),
    content: z.array(z.object({ attachment: Attachment })).min(1).max(16),
  }),
);

export const Media = r4<R4.Media>()(
  z.object({
    ...base,
    resourceType: z.literal("Media"),
    status: z.enum(["preparation", "in-progress", "not-done", "on-hold", "stopped", "completed", "entered-in-error", "unknown"]),
    modality: CodeableConcept.optional(),
    view: CodeableConcept.optional(),
    subject: Reference.optional(),
    createdDateTime: FhirDateTime.optional(),
    bodySite: CodeableConcept.optional(),
    content: Attachment,
    note: z.array(Annotation).max(20).optional(),
  }),
);

export const Binary = r4<R4.Binary>()(z.object({ ...base, resourceType: z.literal("Binary"), contentType: text(200), data: z.string().optional() }));

export const Encounter = r4<R4.Encounter>()(
  z.object({
    ...base,
    resourceType: z.literal("Encounter"),
    status: z.enum(["planned", "arrived", "triaged", "in-progress", "onleave", "finished", "cancelled", "entered-in-error", "unknown"]),
    class: Coding.optional(),
    type: z.array(CodeableConcept).max(20).optional(),
    serviceType: CodeableConcept.optional(),
    period: Period.optional(),
    reasonCode: z.array(CodeableConcept).max(20).optional(),
    reasonReference: z.array(Reference).max(20).optional(),
    hospitalization: z.object({ dischargeDisposition: CodeableConcept.optional() }).optional(),
  }),
);

export const Immunization = r4<R4.Immunization>()(
  z.object({
    ...base,
    resourceType: z.literal("Immunization"),
    status: z.enum(["completed", "entered-in-error", "not-done"]),
    statusReason: CodeableConcept.optional(),
    vaccineCode: CodeableConcept,
    occurrenceDateTime: FhirDateTime.optional(),
    occurrenceString: text(1000).optional(),
    note: z.array(Annotation).max(20).optional(),
  }),
);

export const MedicationAdministration = r4<R4.MedicationAdministration>()(
  z.object({
    ...base,
    resourceType: z.literal("MedicationAdministration"),
    status: z.enum(["in-progress", "not-done", "on-hold", "completed", "entered-in-error", "stopped", "unknown"]),
    statusReason: z.array(CodeableConcept).max(20).optional(),
    medicationCodeableConcept: CodeableConcept.optional(),
    medicationReference: Reference.optional(),
    subject: Reference,
    effectiveDateTime: FhirDateTime.optional(),
    effectivePeriod: Period.optional(),
    dosage: z.object({ text: text(2000).optional(), route: CodeableConcept.optional(), dose: Quantity.optional() }).optional(),
    note: z.array(Annotation).max(20).optional(),
  }),
);

export const FamilyMemberHistory = r4<R4.FamilyMemberHistory>()(
  z.object({
    ...base,
    resourceType: z.literal("FamilyMemberHistory"),
    status: z.enum(["partial", "completed", "entered-in-error", "health-unknown"]),
    patient: Reference,
    relationship: CodeableConcept,
    sex: CodeableConcept.optional(),
    deceasedBoolean: z.boolean().optional(),
    deceasedString: text(1000).optional(),
    condition: z
      .array(z.object({ modifierExtension: z.array(z.object({ url: text(1000), valueCodeableConcept: CodeableConcept.optional() })).max(10).optional(), code: CodeableConcept, outcome: CodeableConcept.optional(), contributedToDeath: z.boolean().optional(), onsetAge: Quantity.optional(), onsetString: text(1000).optional(), note: z.array(Annotation).max(20).optional() }))
      .max(50)
      .optional(),
    note: z.array(Annotation).max(20).optional(),
  }),
);

export const Device = r4<R4.Device>()(
  z.object({
    ...base,
    resourceType: z.literal("Device"),
    status: z.enum(["active", "inactive", "entered-in-error", "unknown"]).optional(),
    type: CodeableConcept.optional(),
    manufactureDate: FhirDateTime.optional(),
    note: z.array(Annotation).max(20).optional(),
  }),
);

export const ImagingStudy = r4<R4.ImagingStudy>()(
  z.object({
    ...base,
    resourceType: z.literal("ImagingStudy"),
    status: z.enum(["registered", "available", "cancelled", "entered-in-error", "unknown"]),
    started: FhirDateTime.optional(),
    modality: z.array(Coding).max(20).optional(),
    description: text(2000).optional(),
    procedureCode: z.array(CodeableConcept).max(20).optional(),
    numberOfInstances: z.number().int().optional(),
    series: z
      .array(z.object({ uid: text(200), modality: Coding, bodySite: Coding.optional(), description: text(2000).optional(), started: FhirDateTime.optional(), numberOfInstances: z.number().int().optional() }))
      .max(1000)
      .optional(),
  }),
);

/** A narrative: only its XHTML text is read. */
const Narrative = z.object({ status: z.enum(["generated", "extensions", "additional", "empty"]), div: z.string().max(1_000_000) });
interface SectionShape {
  title?: string | undefined;
  code?: z.infer<typeof CodeableConcept> | undefined;
  text?: z.infer<typeof Narrative> | undefined;
  emptyReason?: z.infer<typeof CodeableConcept> | undefined;
  section?: SectionShape[] | undefined;
}
/** Composition sections nest (bounded by the bundle's nesting limit); each is read for its title and narrative. */
const CompositionSection: z.ZodType<SectionShape> = z.lazy(() =>
  z.object({ title: text(2000).optional(), code: CodeableConcept.optional(), text: Narrative.optional(), emptyReason: CodeableConcept.optional(), section: z.array(CompositionSection).max(200).optional() }),
);

export const Composition = r4<R4.Composition>()(
  z.object({
    ...base,
    resourceType: z.literal("Composition"),
    status: z.enum(["preliminary", "final", "amended", "entered-in-error"]),
    type: CodeableConcept,
    date: FhirDateTime,
    title: text(2000),
    section: z.array(CompositionSection).max(200).optional(),
  }),
);

/** The resources that become part of the case, by type. */
export const READ_RESOURCES = {
  Patient,
  Condition,
  Observation,
  MedicationStatement,
  MedicationRequest,
  MedicationAdministration,
  Medication,
  AllergyIntolerance,
  FamilyMemberHistory,
  Procedure,
  DiagnosticReport,
  DocumentReference,
  Media,
  Binary,
  Encounter,
  Immunization,
  Device,
  ImagingStudy,
  Composition,
} as const;
export type ReadType = keyof typeof READ_RESOURCES;
export type ReadResource = { [K in ReadType]: z.infer<(typeof READ_RESOURCES)[K]> }[ReadType];
export type ResourceOf<K extends ReadType> = z.infer<(typeof READ_RESOURCES)[K]>;

export const BUNDLE_TYPES = ["collection", "searchset", "transaction", "batch", "document", "history"] as const;

/** One entry of a Bundle, as the envelope reads it; its resource is checked by its own schema afterwards. */
export const BundleEntry = z.object(
  {
    fullUrl: text(4000).optional(),
    // A transaction's DELETE or a batch's GET has no resource: skipped and listed, not refused.
    resource: z.looseObject({ resourceType: z.string({ error: "every resource needs a resourceType" }).min(1) }, { error: "an entry's resource must be a JSON object" }).optional(),
    search: z.object({ mode: z.enum(["match", "include", "outcome"]).optional() }).optional(),
    request: z.object({ method: text(10).optional(), url: text(4000).optional() }).optional(),
  },
  { error: "an entry must be a JSON object" },
);
export type BundleEntry = z.infer<typeof BundleEntry>;

/**
 * Only the envelope, without its entries: each entry is checked with BundleEntry one by one
 * (so a large bundle is read in slices), and each resource by its own schema afterwards.
 */
export const BundleEnvelopeHead = z.object({
  resourceType: z.literal("Bundle", { error: 'resourceType must be "Bundle"' }),
  id: bundleId,
  type: z.enum(BUNDLE_TYPES, { error: `type must be one of ${BUNDLE_TYPES.join(", ")}` }),
  timestamp: FhirDateTime.optional(),
  entry: z.array(z.unknown(), { error: "entry must be an array" }).optional(),
});
export type BundleEnvelope = Omit<z.infer<typeof BundleEnvelopeHead>, "entry"> & { entry?: BundleEntry[] };
