import { MedmmvError } from "../../contracts/errors.js";
import { decodeBase64, sniffImageMime } from "../images.js";
import { MAX_PATIENT_AGE, type ClinicalCase, type ImageInput } from "../../contracts/clinical-case.js";
import { BundleIndex, type IndexedEntry } from "./bundle-index.js";
import type { FhirOrigin, IgnoredResource } from "../../contracts/fhir-origin.js";
import { fhirError, fhirPath, zodToFhirIssues, type FhirIssue } from "./fhir-error.js";
import { BundleEnvelope, READ_RESOURCES, type ReadType, type ResourceOf } from "./fhir-schemas.js";
import { GROUPS, RENDERERS, patientFacts, type Group, type NoteLine, type RenderContext } from "./renderers.js";
import { resourceLinePrefix } from "./resource-lines.js";
import { imagingStudyImages } from "../dicom/imaging-study.js";
import { isDicomPart10 } from "../dicom/render-dicom.js";
import type { z } from "zod";
import type { Attachment } from "./fhir-schemas.js";

export const DEFAULT_FHIR_QUESTION = "What is the most likely diagnosis?";
/** A patient's record for one question, not a data dump: a bigger bundle is refused, not truncated. */
export const MAX_BUNDLE_ENTRIES = 500;
const MAX_NOTES_CHARS = 200_000;
const MAX_IMAGES = 16;
const MAX_TEXT_ATTACHMENT_BYTES = 1_000_000;

export interface BundleToCaseOptions {
  question?: string;
  options?: Record<string, string>;
  maxImageBytes: number;
  /** Used for ages only when the bundle carries no date at all. */
  now?: Date;
  /**
   * Refuse references that do not resolve within the bundle (default). A CDS Hooks prefetch
   * is a set of searches, not a closed record: there an unresolved reference (a Practitioner,
   * an Encounter) points outside and is not an error.
   */
  closedBundle?: boolean;
}

/** Resource types of other FHIR versions: a sign the client sends STU3 or R5, not R4. */
const NOT_R4_TYPES: Record<string, string> = {
  ProcedureRequest: "STU3",
  ReferralRequest: "STU3",
  DeviceComponent: "STU3",
  EligibilityRequest: "STU3",
  ProcessRequest: "STU3",
  DataElement: "STU3",
  Sequence: "STU3",
  ImagingSelection: "R5",
  NutritionIntake: "R5",
  Transport: "R5",
  Permission: "R5",
  InventoryItem: "R5",
  ArtifactAssessment: "R5",
  Requirements: "R5",
};

function isObject(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === "object" && !Array.isArray(v);
}

/** Dates a record's clinical facts carry, for "age at the time of the record". */
function clinicalDates(r: Record<string, unknown>): string[] {
  const out: string[] = [];
  for (const k of ["effectiveDateTime", "effectiveInstant", "issued", "authoredOn", "performedDateTime", "recordedDate", "createdDateTime", "date", "onsetDateTime"]) {
    const v = r[k];
    if (typeof v === "string") out.push(v);
  }
  for (const k of ["effectivePeriod", "performedPeriod"]) {
    const p = r[k];
    if (isObject(p) && typeof p.start === "string") out.push(p.start);
  }
  return out;
}

/** The envelope: a Bundle, R4, of a type we read, not too large. */
function readEnvelope(body: unknown): BundleEnvelope {
  if (!isObject(body)) throw fhirError("INVALID_INPUT", [{ path: "Bundle", message: "the body must be a JSON object: a FHIR Bundle", fhirCode: "structure" }]);
  if (body.resourceType !== "Bundle") {
    const what = typeof body.resourceType === "string" ? `a ${body.resourceType.slice(0, 64)}` : "no resourceType";
    throw fhirError("INVALID_INPUT", [{ path: "Bundle.resourceType", message: `expected a Bundle, got ${what}; wrap the patient's resources in a Bundle of type collection`, fhirCode: "structure" }]);
  }
  // R5 added Bundle.issues; STU3 and R4 share the rest of the envelope.
  if ("issues" in body) throw fhirError("INVALID_INPUT", [{ path: "Bundle.issues", message: "Bundle.issues is an R5 element; send a FHIR R4 (4.0.1) Bundle", fhirCode: "not-supported" }]);
  if (Array.isArray(body.entry) && body.entry.length > MAX_BUNDLE_ENTRIES) {
    throw fhirError("PAYLOAD_TOO_LARGE", [{ path: "Bundle.entry", message: `the bundle holds ${body.entry.length} entries; the limit is ${MAX_BUNDLE_ENTRIES}: send one patient's record for this question (e.g. recent observations only)`, fhirCode: "too-costly" }]);
  }
  const parsed = BundleEnvelope.safeParse(body);
  if (!parsed.success) throw fhirError("INVALID_INPUT", zodToFhirIssues(parsed.error, "Bundle", body));
  return parsed.data;
}

/** Element-level checks of every resource we read; problems are collected, not stopped at. */
function checkResources(index: BundleIndex, closed: boolean): { read: Array<{ entry: IndexedEntry; type: ReadType; resource: unknown }>; ignored: IgnoredResource[] } {
  const issues: FhirIssue[] = [...index.duplicates()];
  const read: Array<{ entry: IndexedEntry; type: ReadType; resource: unknown }> = [];
  const ignored: IgnoredResource[] = [];
  for (const e of index.entries) {
    const version = NOT_R4_TYPES[e.type];
    if (version) {
      issues.push({ path: fhirPath(e.at, ["resourceType"]), message: `${e.type} is a FHIR ${version} resource type, not R4; send a FHIR R4 (4.0.1) Bundle`, fhirCode: "not-supported" });
      continue;
    }
    if (e.type === "MedicationStatement" && "taken" in e.resource) {
      issues.push({ path: fhirPath(e.at, ["taken"]), message: "MedicationStatement.taken is STU3; R4 records this in status (e.g. not-taken)", fhirCode: "not-supported" });
      continue;
    }
    if (!(e.type in READ_RESOURCES)) {
      if (e.type !== "OperationOutcome") ignored.push({ resource: e.name, reason: `resource type ${e.type} is not read` });
      continue;
    }
    const type = e.type as ReadType;
    const parsed = READ_RESOURCES[type].safeParse(e.resource);
    if (!parsed.success) issues.push(...zodToFhirIssues(parsed.error, e.at, e.resource));
    else read.push({ entry: e, type, resource: parsed.data });
  }
  if (issues.length) throw fhirError("INVALID_INPUT", issues);
  const patients = read.filter((r) => r.type === "Patient");
  if (patients.length > 1) {
    throw fhirError("UNPROCESSABLE", patients.slice(1).map((p) => ({ path: p.entry.at, message: `a second Patient (${p.entry.name}, first ${patients[0]!.entry.name}); a case is one patient's record`, fhirCode: "invariant" })));
  }
  const broken = closed ? read.flatMap((r) => index.brokenReferences(r.entry)) : [];
  if (broken.length) throw fhirError("UNPROCESSABLE", broken);
  return { read, ignored };
}

/** Order of sections, then by date within a section (undated facts keep bundle order, last). */
function renderNotes(lines: Array<NoteLine & { name: string; order: number }>): string {
  const out: string[] = [];
  for (const group of Object.keys(GROUPS) as Group[]) {
    const mine = lines
      .filter((l) => l.group === group)
      .sort((a, b) => (a.date && b.date ? (a.date < b.date ? -1 : a.date > b.date ? 1 : a.order - b.order) : a.date ? -1 : b.date ? 1 : a.order - b.order));
    if (!mine.length) continue;
    if (out.length) out.push("");
    out.push(`${GROUPS[group]}:`);
    for (const l of mine) out.push(`${resourceLinePrefix(l.name)}${l.text}`, ...(l.body ?? []));
  }
  return out.join("\n");
}

/**
 * A FHIR R4 Bundle of one patient's record → the ClinicalCase the pipeline reads: the
 * patient's age and sex, notes of one readable line per fact, each line naming its
 * resource, and the record's images. Anything we cannot accept is refused with the FHIRPath
 * of the element to fix; resource types we do not read are listed (metadata.fhir.ignoredResources), not refused.
 */
export function bundleToCase(body: unknown, opts: BundleToCaseOptions): ClinicalCase {
  const envelope = readEnvelope(body);
  const index = new BundleIndex();
  (envelope.entry ?? []).forEach((en, i) => {
    if (en.search?.mode === "outcome") return; // a server's search warnings, not the record
    index.add(i, en.resource as Record<string, unknown>, en.fullUrl);
  });
  const { read, ignored } = checkResources(index, opts.closedBundle ?? true);

  const dates = read.flatMap((r) => clinicalDates(r.entry.resource)).sort();
  const referenceDate = envelope.timestamp ?? dates.at(-1) ?? (opts.now ?? new Date()).toISOString();

  const images: ImageInput[] = [];
  const consumed = new Set<string>();
  const lines: Array<NoteLine & { name: string; order: number }> = [];

  /** Bytes of an attachment (inline, or a Binary of the bundle it points at) and their declared type. */
  const attachmentBytes = (entry: IndexedEntry, att: z.infer<typeof Attachment>, path: PropertyKey[], maxBytes: number) => {
    let data = att.data;
    let contentType = att.contentType;
    let at = fhirPath(entry.at, [...path, "data"]);
    if (data === undefined && att.url) {
      const target = index.resolve(att.url);
      if (target === null) throw fhirError("UNPROCESSABLE", [{ path: fhirPath(entry.at, [...path, "url"]), message: "the attachment url does not resolve to any entry of the bundle", fhirCode: "not-found" }]);
      if (!target) return { link: true as const };
      if (target.type !== "Binary") throw fhirError("UNPROCESSABLE", [{ path: fhirPath(entry.at, [...path, "url"]), message: `the attachment url points at a ${target.type}; it must point at a Binary`, fhirCode: "invariant" }]);
      consumed.add(target.name);
      data = typeof target.resource.data === "string" ? target.resource.data : undefined;
      contentType = contentType ?? (typeof target.resource.contentType === "string" ? target.resource.contentType : undefined);
      at = fhirPath(target.at, ["data"]);
    }
    if (data === undefined) return { link: true as const };
    try {
      return { bytes: decodeBase64(entry.name, data, maxBytes), contentType, at };
    } catch (err) {
      if (err instanceof MedmmvError) throw fhirError(err.code === "PAYLOAD_TOO_LARGE" ? "PAYLOAD_TOO_LARGE" : "INVALID_INPUT", [{ path: at, message: err.code === "PAYLOAD_TOO_LARGE" ? `larger than the limit of ${maxBytes} bytes` : "is not valid base64", fhirCode: err.code === "PAYLOAD_TOO_LARGE" ? "too-costly" : "value" }]);
      throw err;
    }
  };

  const imagePaths: Record<string, string> = {};
  const addImage = (id: string, bytes: Buffer, at: string, caption: string) => {
    const mime = sniffImageMime(bytes) ?? (isDicomPart10(bytes) ? "application/dicom" : null);
    if (!mime) throw fhirError("UNSUPPORTED_MEDIA", [{ path: at, message: "is not an image: accepted formats are JPEG, PNG, GIF, WebP and DICOM Part 10 (read from the bytes, not contentType)", fhirCode: "not-supported" }]);
    if (images.length >= MAX_IMAGES) throw fhirError("PAYLOAD_TOO_LARGE", [{ path: at, message: `more than ${MAX_IMAGES} images in the bundle; send the ${MAX_IMAGES} most relevant`, fhirCode: "too-costly" }]);
    images.push({ id, data: bytes.toString("base64"), caption: caption.slice(0, 2000) });
    imagePaths[id] = at; // image intake (the decoder) names this element when it refuses the picture
  };

  const contextFor = (e: IndexedEntry): RenderContext => {
    const ctx: RenderContext = {
      entry: e,
      index,
      referenceDate,
      ignore: (reason) => void ignored.push({ resource: e.name, reason }),
      attachment: (att, path, caption) => {
        const declared = att.contentType?.split(";")[0]?.trim().toLowerCase();
        const got = attachmentBytes(e, att, path, declared?.startsWith("image/") || declared === "application/dicom" ? opts.maxImageBytes : MAX_TEXT_ATTACHMENT_BYTES);
        const where = fhirPath("", path).replace(/^\./, "");
        if ("link" in got) {
          ctx.ignore(`${where} has no inline data (links are not fetched)`);
          return undefined;
        }
        const type = declared ?? got.contentType?.split(";")[0]?.trim().toLowerCase();
        if (type?.startsWith("image/") || type === "application/dicom") {
          addImage(`${e.name}/${path.filter((p) => p !== "attachment").join("-")}`, got.bytes, got.at, caption);
          return undefined;
        }
        // Narrative HTML is read as its text; the markup means nothing to the model.
        if (type === "text/html" || type === "application/xhtml+xml") return got.bytes.toString("utf8").replace(/<(script|style)[\s\S]*?<\/\1>/gi, " ").replace(/<[^>]*>/g, " ").replace(/&nbsp;/g, " ");
        if (type === undefined || type.startsWith("text/")) return got.bytes.toString("utf8");
        ctx.ignore(`${where} is ${type.slice(0, 100)}, which is not read (text and images are)`);
        return undefined;
      },
      image: (att, path, caption, id) => {
        const got = attachmentBytes(e, att, path, opts.maxImageBytes);
        if ("link" in got) throw fhirError("INVALID_INPUT", [{ path: fhirPath(e.at, [...path, "data"]), message: "the image has no data: send it base64-encoded inline, or as a Binary of the bundle", fhirCode: "required" }]);
        addImage(id, got.bytes, got.at, caption);
      },
    };
    return ctx;
  };
  const render = (r: (typeof read)[number], order: number) => {
    const line = (RENDERERS[r.type] as (x: unknown, c: RenderContext) => NoteLine | null)(r.resource, contextFor(r.entry));
    if (line) lines.push({ ...line, name: r.entry.name, order });
  };
  // A Binary read through an attachment belongs to that resource; only the rest stand alone (as images).
  read.forEach((r, order) => r.type !== "Binary" && render(r, order));
  read.forEach((r, order) => r.type === "Binary" && !consumed.has(r.entry.name) && render(r, order));

  // ImagingStudy with a DICOMweb Endpoint: its pictures are fetched at intake (src/core/intake/dicom).
  for (const { image, at } of imagingStudyImages(index.entries, (ref) => index.resolve(ref))) {
    if (images.length >= MAX_IMAGES) throw fhirError("PAYLOAD_TOO_LARGE", [{ path: at, message: `more than ${MAX_IMAGES} images in the bundle; send the ${MAX_IMAGES} most relevant`, fhirCode: "too-costly" }]);
    images.push(image);
    imagePaths[image.id] = at;
  }

  const notes = renderNotes(lines);
  if (notes.length > MAX_NOTES_CHARS) {
    throw fhirError("PAYLOAD_TOO_LARGE", [{ path: "Bundle.entry", message: `the record renders to ${notes.length} characters of notes; the limit is ${MAX_NOTES_CHARS}: send fewer or shorter documents`, fhirCode: "too-costly" }]);
  }

  const patientEntry = read.find((r) => r.type === "Patient");
  const patient: NonNullable<ClinicalCase["patient"]> = {};
  if (patientEntry) {
    const { age, sex } = patientFacts(patientEntry.resource as ResourceOf<"Patient">, referenceDate);
    // A birthDate after the record's date gives no age at all; one too far back is a typo to fix.
    if (age && age.years > MAX_PATIENT_AGE) {
      throw fhirError("UNPROCESSABLE", [{ path: fhirPath(patientEntry.entry.at, ["birthDate"]), message: `implies an age over ${MAX_PATIENT_AGE} years at the record's date; check the birthDate`, fhirCode: "invariant" }]);
    }
    if (age) patient.age = age.years;
    if (sex) patient.sex = sex;
  }
  const c: ClinicalCase = {
    question: opts.question?.trim() || DEFAULT_FHIR_QUESTION,
    ...(notes ? { notes } : {}),
    ...(opts.options && Object.keys(opts.options).length ? { options: opts.options } : {}),
    ...(images.length ? { images } : {}),
    ...(Object.keys(patient).length ? { patient } : {}),
    metadata: {
      fhir: {
        ...(envelope.id ? { bundleId: envelope.id } : {}),
        bundleType: envelope.type,
        // The reference the sender knows the patient by: its id, else its fullUrl (ids a server has not assigned yet).
        ...(patientEntry ? { patient: patientEntry.entry.resource.id === undefined && patientEntry.entry.fullUrl ? patientEntry.entry.fullUrl : patientEntry.entry.name } : {}),
        referenceDate,
        resources: index.entries.length,
        ignoredResources: ignored,
        ...(images.length ? { imagePaths } : {}),
      } satisfies FhirOrigin,
    },
  };
  return c;
}
