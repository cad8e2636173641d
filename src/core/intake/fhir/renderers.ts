import type { z } from "zod";
import type { BundleIndex, IndexedEntry } from "./bundle-index.js";
import type { Attachment, CodeableConcept, Range, ReadType, ResourceOf } from "./fhir-schemas.js";
import { conceptText, day, oneLine, periodText, quantityText, rangeText, roundedValue, valueText, type ValueParts } from "./render-values.js";
import { htmlText } from "./html-text.js";

/**
 * Sections of the notes, in the order a clinician reads a record and the order the notes
 * budget is filled in: what is true now first, then what happened recently, then history.
 */
export const GROUPS = {
  patient: "Patient",
  problems: "Active problems",
  allergies: "Allergies and intolerances",
  medications: "Current medications",
  medicationsUnknown: "Medications of unknown status (the record does not say whether they are taken)",
  administered: "Medications given (administrations)",
  vitals: "Vital signs (latest, with earlier readings)",
  labs: "Laboratory results (latest, with earlier readings)",
  observations: "Other observations (latest)",
  encounters: "Recent encounters",
  procedures: "Procedures",
  immunizations: "Immunizations",
  devices: "Devices",
  imaging: "Imaging studies",
  reports: "Diagnostic reports",
  documents: "Notes and documents",
  images: "Images",
  familyHistory: "Family history",
  history: "History (resolved, stopped and older)",
} as const;
export type Group = keyof typeof GROUPS;

/** One fact of the record: a line that names its resource, and for documents their text below it. */
export interface NoteLine {
  group: Group;
  /** For ordering within the group (FHIR dateTime). */
  date?: string;
  text: string;
  body?: string[];
  /** Readings of one code form one trend line: `key` names the code, `reading` this value in short. */
  series?: { key: string; reading: string };
  /** Lines with the same key in a group are condensed to the latest, with a count (repeat visits, refills). */
  condense?: string;
  /** The fact is already in the notes another way (a lab panel whose results are its Observations). */
  folded?: true;
  /**
   * The line says that something exists but holds nothing to reason on, and why ("no
   * information is available", "a link only"): shown, but a record of only such lines is
   * refused as holding nothing readable.
   */
  empty?: EmptyKind[];
}

/** Why a line holds nothing readable; the refusal of a record of only such lines names them. */
export type EmptyKind = "no-information" | "link-only" | "advance-directive";

/** What a renderer may ask of the bundle while rendering one resource. */
export interface RenderContext {
  entry: IndexedEntry;
  index: BundleIndex;
  /** The date ages are computed at (bundle timestamp, else the latest clinical date). */
  referenceDate: string;
  /** The text of an attachment, or undefined when it is not text (an image is added to the case instead). */
  attachment(att: z.infer<typeof Attachment>, path: PropertyKey[], caption: string): string | undefined;
  /** Register an attachment that must be an image (Media, a Binary on its own); false when it is only a link (left out, and said). */
  image(att: z.infer<typeof Attachment>, path: PropertyKey[], caption: string, id: string): boolean;
  /** Record that this resource (or part of it) was not used, and why. */
  ignore(reason: string): void;
}

type Renderer<K extends ReadType> = (r: ResourceOf<K>, ctx: RenderContext) => NoteLine | null;

function join(parts: Array<string | undefined | false>, sep = ", "): string {
  return parts.filter((p): p is string => !!p).join(sep);
}

function code(c: z.infer<typeof CodeableConcept> | undefined): string | undefined {
  return c?.coding?.find((x) => x.code)?.code;
}

/** What makes two facts "the same thing": the first coding (system and code), else the text. */
function seriesKey(c: z.infer<typeof CodeableConcept> | undefined): string | undefined {
  const coding = c?.coding?.find((x) => x.code);
  if (coding) return `${coding.system ?? ""}|${coding.code}`;
  const t = conceptText(c);
  return t ? t.toLowerCase() : undefined;
}

/** IPS's "absent or unknown" code system (no-problem-info, no-allergy-info, no-medication-info, …). */
const IPS_ABSENT = "http://hl7.org/fhir/uv/ips/CodeSystem/absent-unknown-uv-ips";

/**
 * A code that says the sender has no information (IPS `no-…-info`). "No known allergies"
 * (`no-known-…`) is a fact and is read as one; "no information" is not.
 */
function noInformation(c: z.infer<typeof CodeableConcept> | undefined): boolean {
  return !!c?.coding?.some((x) => x.system === IPS_ABSENT && /^no-.*-info$/.test(x.code ?? ""));
}

function dated(line: string, date: string | undefined): string {
  return date ? `${line} (${date})` : line;
}

/** Whole years (months under 2) between a FHIR birthDate and a reference date. */
export function ageAt(birthDate: string, referenceDate: string): { years: number; text: string } | null {
  const [by, bm = 7, bd = 1] = birthDate.split("-").map(Number);
  const [ry, rm = 1, rd = 1] = referenceDate.slice(0, 10).split("-").map(Number);
  if (by === undefined || ry === undefined) return null;
  const months = (ry - by) * 12 + (rm - bm) - (rd < bd ? 1 : 0);
  if (months < 0) return null;
  const years = Math.floor(months / 12);
  if (years < 2) return { years: Math.round((months / 12) * 100) / 100, text: `${months}-month-old` };
  return { years, text: `${years}-year-old` };
}

const INTERPRETATION: Record<string, string> = { H: "high", L: "low", HH: "critically high", LL: "critically low", A: "abnormal", AA: "critically abnormal", N: "normal", HU: "significantly high", LU: "significantly low", POS: "positive", NEG: "negative" };

function interpretationText(list: Array<z.infer<typeof CodeableConcept>> | undefined): string | undefined {
  if (!list?.length) return undefined;
  return list
    .map((c) => c.text ?? c.coding?.find((x) => x.display)?.display ?? INTERPRETATION[code(c) ?? ""] ?? code(c))
    .filter(Boolean)
    .join(", ");
}

type Measured = ValueParts & {
  interpretation?: Array<z.infer<typeof CodeableConcept>> | undefined;
  referenceRange?: Array<z.infer<typeof Range> & { text?: string | undefined }> | undefined;
};

function referenceRangeText(v: Measured): string | undefined {
  const r = v.referenceRange?.[0];
  if (!r) return undefined;
  const t = rangeText(r) ?? (r.text ? oneLine(r.text) : undefined);
  return t ? `reference range ${t}` : undefined;
}

/** A value with its interpretation and reference range: `5.9 mmol/L, high, reference range 3.5 – 5.1 mmol/L`. */
function measured(v: Measured): string | undefined {
  const value = valueText(v);
  if (value === undefined) return undefined;
  return join([value, interpretationText(v.interpretation), referenceRangeText(v)]);
}

const SYSTOLIC = "8480-6";
const DIASTOLIC = "8462-4";

/** A Patient's age and sex as of `referenceDate`: one reading for its note line and for `case.patient`. */
export function patientFacts(r: Pick<ResourceOf<"Patient">, "birthDate" | "gender">, referenceDate: string): { age: { years: number; text: string } | null; sex: string | undefined } {
  return { age: r.birthDate ? ageAt(r.birthDate, referenceDate) : null, sex: r.gender && r.gender !== "unknown" ? r.gender : undefined };
}

const patient: Renderer<"Patient"> = (r, ctx) => {
  const { age, sex } = patientFacts(r, ctx.referenceDate);
  const who = join([age?.text, sex], " ") || "patient (age and sex not recorded)";
  return { group: "patient", text: join([who, r.deceasedBoolean || r.deceasedDateTime ? `deceased${r.deceasedDateTime ? ` ${day(r.deceasedDateTime)}` : ""}` : undefined]) };
};

const condition: Renderer<"Condition"> = (r, ctx) => {
  const verification = code(r.verificationStatus);
  if (verification === "entered-in-error") return ctx.ignore("verificationStatus is entered-in-error"), null;
  const onset = day(r.onsetDateTime) ?? (r.onsetString ? oneLine(r.onsetString) : undefined) ?? (r.onsetAge ? `age ${quantityText(r.onsetAge)}` : undefined);
  const status = join([conceptText(r.clinicalStatus), verification && verification !== "confirmed" ? conceptText(r.verificationStatus) : undefined, conceptText(r.severity)]);
  const text = join([conceptText(r.code) ?? "Condition (no code)", status || undefined, onset ? `onset ${onset}` : undefined, r.abatementDateTime ? `resolved ${day(r.abatementDateTime)}` : undefined, ...(r.note ?? []).map((n) => `note: ${oneLine(n.text)}`)], "; ");
  const clinical = code(r.clinicalStatus);
  const current = clinical ? ["active", "recurrence", "relapse"].includes(clinical) : !r.abatementDateTime;
  return { group: current ? "problems" : "history", date: r.onsetDateTime ?? r.recordedDate, text, ...(current ? {} : { condense: `condition|${seriesKey(r.code) ?? text}` }), ...(noInformation(r.code) ? { empty: ["no-information" as const] } : {}) };
};

const observation: Renderer<"Observation"> = (r, ctx) => {
  if (r.status === "entered-in-error" || r.status === "cancelled") return ctx.ignore(`status is ${r.status}`), null;
  const categories = (r.category ?? []).map(code);
  const group: Group = categories.includes("vital-signs") ? "vitals" : categories.includes("laboratory") ? "labs" : "observations";
  const comps = r.component ?? [];
  const sys = comps.find((c) => c.code.coding?.some((x) => x.code === SYSTOLIC));
  const dia = comps.find((c) => c.code.coding?.some((x) => x.code === DIASTOLIC));
  let value: string | undefined;
  if (sys?.valueQuantity?.value !== undefined && dia?.valueQuantity?.value !== undefined) {
    // Blood pressure is read as one value, the way it is written on a chart.
    const unit = sys.valueQuantity.unit ?? sys.valueQuantity.code ?? "";
    value = join([`${roundedValue(sys.valueQuantity.value, "mm[Hg]")}/${roundedValue(dia.valueQuantity.value, "mm[Hg]")}${unit ? ` ${unit}` : ""}`, interpretationText(r.interpretation ?? sys.interpretation)]);
  } else {
    const own = measured(r);
    const parts = comps
      .map((c) => {
        const m = measured(c);
        return m ? `${conceptText(c.code) ?? "component"} ${m}` : undefined;
      })
      .filter((p): p is string => !!p);
    // A panel without a value of its own reads as "Venous blood gas: pH 7.12, low; …".
    value = own ? [own, ...parts].join("; ") : parts.length ? `: ${parts.join("; ")}` : undefined;
  }
  const status = r.status === "final" || r.status === "amended" || r.status === "corrected" ? undefined : r.status;
  const date = r.effectiveDateTime ?? r.effectivePeriod?.start ?? r.effectiveInstant ?? r.issued;
  // A question group (Oracle's social history "Alcohol") holds no value: its members, each a question and its answer, are the facts.
  const members = r.hasMember ?? [];
  if (!value && !r.note?.length && members.length && members.every((m) => m.reference && ctx.index.resolve(m.reference)?.type === "Observation")) {
    return { group, date, text: dated(`${conceptText(r.code) ?? "Observation"}: answered in ${members.length} observation${members.length === 1 ? "" : "s"}`, day(date)), folded: true };
  }
  // A question and its answer (a survey or social-history item answered with a code or text) reads "question: answer";
  // each question is its own series, though several share one code (Oracle's share SNOMED 363905002).
  const answer = value !== undefined && r.valueQuantity === undefined && !comps.length && categories.some((c) => c === "social-history" || c === "survey");
  const text = join([`${conceptText(r.code) ?? "Observation"}${value ? `${answer ? ": " : value.startsWith(":") ? "" : " "}${value}` : " (no value)"}`, status, ...(r.note ?? []).map((n) => `note: ${oneLine(n.text)}`)]);
  const key = answer ? `${seriesKey(r.code)}|${conceptText(r.code)?.toLowerCase()}` : seriesKey(r.code);
  const reading = value ? (value.startsWith(":") ? value.slice(2) : value).split(", ")[0]! : "no value";
  return { group, date, text: dated(text, day(date)), ...(key ? { series: { key: `${group}|${key}`, reading: dated(reading.slice(0, 120), day(date)) } } : {}) };
};

/** A Medication's name: its code's text or display. */
function medicationText(m: Record<string, unknown> | undefined): string | undefined {
  if (!m || m.resourceType !== "Medication") return undefined;
  return conceptText(m.code as z.infer<typeof CodeableConcept> | undefined);
}

/**
 * The medicine a statement or request is about, named as a clinician would: its own
 * concept; else the Medication it references — contained (`#metformin`), in the bundle, or
 * only the reference's display; "medication (not named)" only when none of these names it.
 */
function medicationName(r: { medicationCodeableConcept?: z.infer<typeof CodeableConcept> | undefined; medicationReference?: { reference?: string | undefined; display?: string | undefined } | undefined }, ctx: RenderContext): string {
  const direct = conceptText(r.medicationCodeableConcept);
  if (direct) return direct;
  const ref = r.medicationReference?.reference;
  let viaRef: string | undefined;
  if (ref?.startsWith("#")) {
    const contained = Array.isArray(ctx.entry.resource.contained) ? (ctx.entry.resource.contained as unknown[]) : [];
    const hit = contained.find((c): c is Record<string, unknown> => !!c && typeof c === "object" && (c as { id?: unknown }).id === ref.slice(1));
    viaRef = medicationText(hit);
  } else if (ref) {
    viaRef = medicationText(ctx.index.resolve(ref)?.resource);
  }
  const display = r.medicationReference?.display;
  return viaRef ?? (display ? oneLine(display) : "medication (not named)");
}

/** Where a statement's or request's status files it: now, unknown (its own section), or history. */
function medicationGroup(status: string, current: readonly string[]): Group {
  if (current.includes(status)) return "medications";
  return status === "unknown" ? "medicationsUnknown" : "history";
}

const medicationStatement: Renderer<"MedicationStatement"> = (r, ctx) => {
  if (r.status === "entered-in-error") return ctx.ignore("status is entered-in-error"), null;
  const dose = (r.dosage ?? []).map((d) => d.text && oneLine(d.text)).filter(Boolean).join("; ");
  const when = periodText(r.effectivePeriod) ?? day(r.effectiveDateTime);
  const name = medicationName(r, ctx);
  const group = medicationGroup(r.status, ["active", "intended", "on-hold"]);
  return { group, condense: `med|${name}`, date: r.effectivePeriod?.start ?? r.effectiveDateTime ?? r.dateAsserted, text: `${join([name, dose || undefined], " — ")} (${join([r.status.replace("-", " "), when])})`, ...(noInformation(r.medicationCodeableConcept) ? { empty: ["no-information" as const] } : {}) };
};

const medicationRequest: Renderer<"MedicationRequest"> = (r, ctx) => {
  if (r.status === "entered-in-error") return ctx.ignore("status is entered-in-error"), null;
  const dose = (r.dosageInstruction ?? []).map((d) => d.text && oneLine(d.text)).filter(Boolean).join("; ");
  const name = medicationName(r, ctx);
  const group = medicationGroup(r.status, ["active", "on-hold", "draft"]);
  return { group, condense: `med|${name}`, date: r.authoredOn, text: `${join([name, dose || undefined], " — ")} (${join([`${r.status} ${r.intent}`, day(r.authoredOn) ? `prescribed ${day(r.authoredOn)}` : undefined])})`, ...(noInformation(r.medicationCodeableConcept) ? { empty: ["no-information" as const] } : {}) };
};

/** What was given, when: each administration a line; repeated doses of one medicine condensed to the latest, with a count. */
const medicationAdministration: Renderer<"MedicationAdministration"> = (r, ctx) => {
  if (r.status === "entered-in-error") return ctx.ignore("status is entered-in-error"), null;
  const name = medicationName(r, ctx);
  const dose = join([r.dosage?.dose ? quantityText(r.dosage.dose) : undefined, conceptText(r.dosage?.route), r.dosage?.text ? oneLine(r.dosage.text) : undefined], " ");
  const when = periodText(r.effectivePeriod) ?? day(r.effectiveDateTime);
  const status = r.status === "completed" ? "given" : r.status === "not-done" ? `not given${r.statusReason?.length ? ` (${r.statusReason.map(conceptText).filter(Boolean).join(", ")})` : ""}` : r.status.replace("-", " ");
  const text = join([`${join([name, dose || undefined], " — ")} (${join([status, when])})`, ...(r.note ?? []).map((n) => `note: ${oneLine(n.text)}`)], "; ");
  return { group: "administered", condense: `given|${name}|${r.status}`, date: r.effectiveDateTime ?? r.effectivePeriod?.start, text };
};

/**
 * Modifier extensions this reader understands, by resource type: Oracle Health's
 * FamilyMemberHistory.condition says whether the relative has the condition
 * (condition-result: positive or negative) and whether it is current (condition-lifecycle-status).
 * Any other modifier extension still refuses its resource (R4 forbids reading it as if absent).
 */
export const UNDERSTOOD_MODIFIERS: Record<string, ReadonlySet<string>> = {
  FamilyMemberHistory: new Set(["https://fhir-ehr.cerner.com/r4/StructureDefinition/condition-result", "https://fhir-ehr.cerner.com/r4/StructureDefinition/condition-lifecycle-status"]),
};

function modifierValue(list: Array<{ url: string; valueCodeableConcept?: z.infer<typeof CodeableConcept> | undefined }> | undefined, name: string): string | undefined {
  const m = list?.find((x) => x.url.endsWith(`/${name}`));
  return (code(m?.valueCodeableConcept) ?? conceptText(m?.valueCodeableConcept))?.toLowerCase();
}

/** Who in the family had what: the relative, then each condition with its onset and outcome. */
const familyMemberHistory: Renderer<"FamilyMemberHistory"> = (r, ctx) => {
  if (r.status === "entered-in-error") return ctx.ignore("status is entered-in-error"), null;
  const who = conceptText(r.relationship) ?? "Relative";
  const conditions = (r.condition ?? []).map((c) =>
    join([
      // SNOMED 260385009 |Negative|: the relative does not have it; a lifecycle other than active is said.
      `${modifierValue(c.modifierExtension, "condition-result") === "260385009" || modifierValue(c.modifierExtension, "condition-result") === "negative" ? "no " : ""}${conceptText(c.code) ?? "condition not named"}`,
      ((l) => (l && l !== "active" ? l : undefined))(modifierValue(c.modifierExtension, "condition-lifecycle-status")), c.onsetAge ? `onset age ${quantityText(c.onsetAge)}` : c.onsetString ? `onset ${oneLine(c.onsetString)}` : undefined, c.outcome ? `outcome ${conceptText(c.outcome)}` : undefined, c.contributedToDeath ? "contributed to death" : undefined, ...(c.note ?? []).map((n) => `note: ${oneLine(n.text)}`)]),
  );
  const deceased = r.deceasedBoolean ? "deceased" : r.deceasedString ? `deceased ${oneLine(r.deceasedString)}` : undefined;
  const unknown = r.status === "health-unknown" && !conditions.length;
  const text = `${who}: ${join([conditions.join("; ") || (unknown ? "health unknown" : undefined), deceased, ...(r.note ?? []).map((n) => `note: ${oneLine(n.text)}`)], "; ") || "no condition recorded"}`;
  return { group: "familyHistory", text, ...(unknown || (!conditions.length && !r.note?.length) ? { empty: ["no-information" as const] } : {}) };
};

const allergy: Renderer<"AllergyIntolerance"> = (r, ctx) => {
  const verification = code(r.verificationStatus);
  if (verification === "entered-in-error") return ctx.ignore("verificationStatus is entered-in-error"), null;
  const reactions = (r.reaction ?? []).map((x) => join([x.manifestation.map(conceptText).filter(Boolean).join(", "), x.severity ? `(${x.severity})` : undefined, x.description ? oneLine(x.description) : undefined], " "));
  const text = join([
    `${conceptText(r.code) ?? "substance not named"}${r.type ? ` ${r.type}` : ""}${r.category?.length ? ` (${r.category.join(", ")})` : ""}`,
    reactions.length ? `reaction: ${reactions.join("; ")}` : undefined,
    r.criticality ? `criticality ${r.criticality}` : undefined,
    conceptText(r.clinicalStatus),
    verification && verification !== "confirmed" ? conceptText(r.verificationStatus) : undefined,
  ], "; ");
  const clinical = code(r.clinicalStatus);
  return { group: !clinical || clinical === "active" ? "allergies" : "history", date: r.onsetDateTime ?? r.recordedDate, text, ...(noInformation(r.code) ? { empty: ["no-information" as const] } : {}) };
};

const procedure: Renderer<"Procedure"> = (r, ctx) => {
  if (r.status === "entered-in-error") return ctx.ignore("status is entered-in-error"), null;
  const when = periodText(r.performedPeriod) ?? day(r.performedDateTime);
  const text = join([conceptText(r.code) ?? "Procedure (no code)", r.status.replace("-", " "), r.outcome ? `outcome: ${conceptText(r.outcome)}` : undefined, ...(r.note ?? []).map((n) => `note: ${oneLine(n.text)}`)]);
  return { group: "procedures", condense: `procedure|${seriesKey(r.code) ?? text}`, date: r.performedDateTime ?? r.performedPeriod?.start, text: dated(text, when) };
};

/** Text of a document, one indented line per line, so every line still belongs to its resource. */
function bodyLines(text: string): string[] {
  return text
    .split(/\r?\n/)
    .map((l) => l.replace(/\s+/g, " ").trim())
    .filter(Boolean)
    .map((l) => `  ${l}`);
}

const diagnosticReport: Renderer<"DiagnosticReport"> = (r, ctx) => {
  if (r.status === "entered-in-error" || r.status === "cancelled") return ctx.ignore(`status is ${r.status}`), null;
  const date = r.effectiveDateTime ?? r.effectivePeriod?.start ?? r.issued;
  const results = (r.result ?? []).map((x) => (x.reference ? ctx.index.resolve(x.reference)?.name : undefined) ?? x.display).filter(Boolean);
  const body: string[] = [];
  (r.presentedForm ?? []).forEach((att, i) => {
    const t = ctx.attachment(att, ["presentedForm", i], `${conceptText(r.code) ?? "Report"}${att.title ? `: ${oneLine(att.title)}` : ""}`);
    if (t) body.push(...bodyLines(t));
  });
  (r.media ?? []).forEach((m, i) => {
    const target = m.link.reference ? ctx.index.resolve(m.link.reference) : undefined;
    if (m.comment) body.push(`  ${target ? `${target.name}: ` : ""}${oneLine(m.comment)}`);
    else if (!target) ctx.ignore(`media[${i}] links outside the bundle`);
  });
  const text = join([
    dated(`${conceptText(r.code) ?? "Report"}${r.status !== "final" ? `, ${r.status}` : ""}`, day(date)),
    r.conclusion ? `conclusion: ${oneLine(r.conclusion)}` : undefined,
    r.conclusionCode?.length ? `coded: ${r.conclusionCode.map(conceptText).filter(Boolean).join(", ")}` : undefined,
    results.length ? `results: ${results.join(", ")}` : undefined,
  ], "; ");
  // A lab panel with nothing of its own to say: its results are the Observations, read in their trends.
  const folded = !body.length && !r.conclusion && !r.conclusionCode?.length && results.length > 0 && (r.result ?? []).every((x) => x.reference && ctx.index.resolve(x.reference));
  // A report whose only content is links to its text (an Oracle radiology report of Binary URLs) is not read from its title.
  const linksOnly = !body.length && !r.conclusion && !r.conclusionCode?.length && !results.length && (r.presentedForm?.length ?? 0) > 0;
  if (linksOnly) return { group: "reports", date, text: `${text} (its text is only links, which were not read)`, empty: ["link-only"] };
  return { group: "reports", date, text, ...(body.length ? { body } : {}), ...(folded ? { folded: true as const } : {}) };
};

const documentReference: Renderer<"DocumentReference"> = (r, ctx) => {
  if (r.status === "entered-in-error") return ctx.ignore("status is entered-in-error"), null;
  const title = conceptText(r.type) ?? (r.description ? oneLine(r.description) : "Document");
  const body: string[] = [];
  r.content.forEach((c, i) => {
    const t = ctx.attachment(c.attachment, ["content", i, "attachment"], title);
    if (t) body.push(...bodyLines(t));
  });
  const text = dated(join([title, r.description && conceptText(r.type) ? oneLine(r.description) : undefined, r.status === "superseded" ? "superseded" : undefined]), day(r.date));
  return { group: "documents", date: r.date, text: body.length ? `${text}:` : `${text} (no readable text)`, ...(body.length ? { body } : { empty: ["link-only" as const] }) };
};

const media: Renderer<"Media"> = (r, ctx) => {
  if (r.status === "entered-in-error" || r.status === "not-done") return ctx.ignore(`status is ${r.status}`), null;
  const caption = join([
    r.content.title ? oneLine(r.content.title) : undefined,
    conceptText(r.modality),
    conceptText(r.view),
    conceptText(r.bodySite),
    ...(r.note ?? []).map((n) => oneLine(n.text)),
  ]) || "image";
  if (!ctx.image(r.content, ["content"], caption, ctx.entry.name)) {
    return { group: "images", date: r.createdDateTime, text: dated(`${caption} — image not read (a link to another server)`, day(r.createdDateTime)), empty: ["link-only"] };
  }
  return { group: "images", date: r.createdDateTime, text: dated(`${caption} — image ${ctx.entry.name}`, day(r.createdDateTime)) };
};

const binary: Renderer<"Binary"> = (r, ctx) => {
  if (!ctx.image({ contentType: r.contentType, ...(r.data !== undefined ? { data: r.data } : {}) }, [], "image", ctx.entry.name)) return null;
  return { group: "images", text: `image ${ctx.entry.name}` };
};

/** Medication is read through the statements and requests that reference it. */
const medication: Renderer<"Medication"> = () => null;

/** A reference's target named as a clinician would: the resource's code, else the reference's display. */
function referencedConcept(ref: { reference?: string | undefined; display?: string | undefined }, ctx: RenderContext): string | undefined {
  const target = ref.reference ? ctx.index.resolve(ref.reference) : undefined;
  const concept = target ? conceptText(target.resource.code as z.infer<typeof CodeableConcept> | undefined) : undefined;
  return concept ?? (ref.display ? oneLine(ref.display) : undefined);
}

const encounter: Renderer<"Encounter"> = (r, ctx) => {
  if (r.status === "entered-in-error" || r.status === "cancelled") return ctx.ignore(`status is ${r.status}`), null;
  const kind = (r.type ?? []).map(conceptText).find(Boolean) ?? conceptText(r.serviceType) ?? "Encounter";
  const reasons = [...(r.reasonCode ?? []).map(conceptText), ...(r.reasonReference ?? []).map((x) => referencedConcept(x, ctx))].filter((x): x is string => !!x);
  const text = join([
    dated(join([kind, r.class?.display ?? r.class?.code, r.status !== "finished" ? r.status : undefined]), periodText(r.period)),
    reasons.length ? `reason: ${[...new Set(reasons)].join(", ")}` : undefined,
    r.hospitalization?.dischargeDisposition ? `discharged: ${conceptText(r.hospitalization.dischargeDisposition)}` : undefined,
  ], "; ");
  return { group: "encounters", date: r.period?.start, text, condense: `encounter|${kind.toLowerCase()}` };
};

const immunization: Renderer<"Immunization"> = (r, ctx) => {
  if (r.status === "entered-in-error") return ctx.ignore("status is entered-in-error"), null;
  const when = day(r.occurrenceDateTime) ?? (r.occurrenceString ? oneLine(r.occurrenceString) : undefined);
  const text = join([conceptText(r.vaccineCode) ?? "vaccine not named", r.status === "not-done" ? `not given${r.statusReason ? ` (${conceptText(r.statusReason)})` : ""}` : undefined, ...(r.note ?? []).map((n) => `note: ${oneLine(n.text)}`)]);
  return { group: "immunizations", date: r.occurrenceDateTime, text: dated(text, when), condense: `vaccine|${seriesKey(r.vaccineCode) ?? text}|${r.status}` };
};

const device: Renderer<"Device"> = (r, ctx) => {
  if (r.status === "entered-in-error") return ctx.ignore("status is entered-in-error"), null;
  // The UDI and serial numbers are identifiers, not clinical facts: never rendered.
  const text = join([conceptText(r.type) ?? "Device (type not recorded)", r.status && r.status !== "active" ? r.status : undefined, ...(r.note ?? []).map((n) => `note: ${oneLine(n.text)}`)]);
  return { group: "devices", date: r.manufactureDate, text };
};

const imagingStudy: Renderer<"ImagingStudy"> = (r, ctx) => {
  if (r.status === "entered-in-error" || r.status === "cancelled") return ctx.ignore(`status is ${r.status}`), null;
  const series = r.series ?? [];
  const modalities = [...new Set([...(r.modality ?? []), ...series.map((x) => x.modality)].map((c) => c.display ?? c.code).filter(Boolean))];
  const sites = [...new Set(series.map((x) => x.bodySite && (x.bodySite.display ?? x.bodySite.code)).filter(Boolean))];
  const what = (r.procedureCode ?? []).map(conceptText).find(Boolean) ?? (r.description ? oneLine(r.description) : "Imaging study");
  const instances = r.numberOfInstances ?? series.reduce((n, x) => n + (x.numberOfInstances ?? 0), 0);
  const text = join([
    what,
    modalities.length ? `modality ${modalities.join(", ")}` : undefined,
    sites.length ? `body site ${sites.join(", ")}` : undefined,
    series.length ? `${series.length} series${instances ? `, ${instances} images` : ""}` : undefined,
    r.status !== "available" ? r.status : undefined,
  ]);
  return { group: "imaging", date: r.started, text: dated(text, day(r.started)) };
};

type Section = NonNullable<ResourceOf<"Composition">["section"]>[number];

/** LOINC 42348-3 "Advance directives": a legal statement of wishes, not a clinical finding. */
const ADVANCE_DIRECTIVES = "42348-3";
/**
 * A short narrative that only says nothing is known, in the languages IPS documents are
 * written in ("There is no information available…", "Geen informatie", "Keine Angaben",
 * "Aucune information", "No hay información"…).
 */
const NO_INFORMATION = /\b(no (information|data)( is)? (available|known|recorded)|there is no information|no information (available|about|regarding)|not known|unknown|geen (gegevens|informatie)|keine (angaben|informationen|daten)|aucune (information|donn[ée]e)|no hay (informaci[oó]n|datos)|nessuna informazione|sem informa[cç][aã]o)\b/i;

/** What a section holds: readable content, nothing (no information / an empty reason), or an advance directive only. */
function sectionKind(s: Section, narrative: string): "content" | "no-information" | "advance-directive" {
  if (s.code?.coding?.some((c) => c.code === ADVANCE_DIRECTIVES)) return "advance-directive";
  if (s.emptyReason) return "no-information";
  if (!narrative || (narrative.length <= 300 && NO_INFORMATION.test(narrative))) return "no-information";
  return "content";
}

/** A document's sections as text: each title, then its narrative; nested sections follow their parent. */
function sectionLines(sections: Section[]): { lines: string[]; kinds: Set<string> } {
  const out: string[] = [];
  const kinds = new Set<string>();
  const stack = [...sections].reverse();
  while (stack.length) {
    const s = stack.pop()!;
    const title = s.title ? oneLine(s.title) : conceptText(s.code);
    const narrative = s.text ? oneLine(htmlText(s.text.div)) : "";
    if (!s.section?.length) kinds.add(sectionKind(s, narrative));
    if (title || narrative) out.push(join([title, narrative], ": "));
    if (s.section) stack.push(...[...s.section].reverse());
  }
  return { lines: out, kinds };
}

const composition: Renderer<"Composition"> = (r, ctx) => {
  if (r.status === "entered-in-error") return ctx.ignore("status is entered-in-error"), null;
  const { lines, kinds } = sectionLines(r.section ?? []);
  const body = bodyLines(lines.join("\n"));
  const text = dated(join([oneLine(r.title), conceptText(r.type), r.status !== "final" ? r.status : undefined]), day(r.date));
  // A summary whose every section says "no information" (an advance directive aside) holds nothing to reason on.
  const empty = kinds.has("content") ? undefined : ([...kinds] as EmptyKind[]);
  return { group: "documents", date: r.date, text: body.length ? `${text}:` : `${text} (no narrative)`, ...(body.length ? { body } : {}), ...(empty ? { empty } : {}) };
};

export const RENDERERS: { [K in ReadType]: Renderer<K> } = {
  Patient: patient,
  Condition: condition,
  Observation: observation,
  MedicationStatement: medicationStatement,
  MedicationRequest: medicationRequest,
  MedicationAdministration: medicationAdministration,
  FamilyMemberHistory: familyMemberHistory,
  Medication: medication,
  AllergyIntolerance: allergy,
  Procedure: procedure,
  DiagnosticReport: diagnosticReport,
  DocumentReference: documentReference,
  Media: media,
  Binary: binary,
  Encounter: encounter,
  Immunization: immunization,
  Device: device,
  ImagingStudy: imagingStudy,
  Composition: composition,
};
