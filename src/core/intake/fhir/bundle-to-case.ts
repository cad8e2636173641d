import { MedmmvError, isMedmmvError } from "../../contracts/errors.js";
import { decodeBase64, recogniseImage } from "../images.js";
import { imagingStudyImages } from "../dicom/imaging-study.js";
import { MAX_PATIENT_AGE, type ClinicalCase, type ImageInput } from "../../contracts/clinical-case.js";
import { BundleIndex, extensionsOf, nestingTooDeep, type ExtensionsFound, type IndexedEntry } from "./bundle-index.js";
import type { FhirOrigin, IgnoredResource } from "../../contracts/fhir-origin.js";
import { fhirError, fhirPath, zodToFhirIssues, type FhirIssue } from "./fhir-error.js";
import { BundleEntry, BundleEnvelopeHead, READ_RESOURCES, type BundleEnvelope, type ReadType, type ResourceOf } from "./fhir-schemas.js";
import { RENDERERS, UNDERSTOOD_MODIFIERS, patientFacts, type EmptyKind, type NoteLine, type RenderContext } from "./renderers.js";
import { otherVersion } from "./fhir-version.js";
import { labelledNames, scrubberFor } from "./deidentify.js";
import { summariseNotesSteps, type RenderedLine } from "./summarise.js";
import { withoutChoicesGivenTwice } from "./choice-elements.js";
import { OTHER_PATIENT_REASON, ofAnotherPatient, patientDisplays, recordPatient, type RecordPatient } from "./one-patient.js";
import { htmlText } from "./html-text.js";
import type { z } from "zod";
import type { Attachment } from "./fhir-schemas.js";

export const DEFAULT_FHIR_QUESTION = "What is the most likely diagnosis?";
/**
 * Defaults of the FHIR limits (MEDMMV_FHIR_* in config.ts sets them for the server). The
 * byte size of a bundle is bounded by the HTTP body limit; these bound what is read of it.
 */
export const FHIR_DEFAULTS = {
  /** Characters of notes the model reads; a record renders to more and is summarised. */
  notesBudget: 16_000,
  /**
   * Resources of the types read (Claims, Provenance and the like are not counted): above
   * what 25 MiB of real record holds (Synthea averages over a kilobyte an entry), so the
   * byte limit is what a real record meets first.
   */
  maxResources: 50_000,
  /** Levels of objects and arrays inside one resource. */
  maxDepth: 64,
} as const;
/** Entries of any kind, read or not: a bound on the walk itself, far above any one patient's record. */
export const MAX_BUNDLE_ENTRIES = 200_000;
const MAX_IMAGES = 16;
const MAX_TEXT_ATTACHMENT_BYTES = 1_000_000;
/** Per-resource reasons kept in the case's metadata; past this, one line says how many more. */
const MAX_IGNORED_LISTED = 100;
/** Names learned from labelled narrative fields, at most: one patient's record has a handful. */
const MAX_LEARNED_NAMES = 50;
/** Entries processed between chances to yield the event loop (bundleToCaseYielding decides by time whether to). */
const STEP = 25;
/** Time a slice of reading may hold the event loop (bundleToCaseYielding). */
const SLICE_MS = 8;

export interface BundleToCaseOptions {
  question?: string;
  options?: Record<string, string>;
  maxImageBytes: number;
  /** The date ages are computed at when neither `referenceDate` nor the bundle's `timestamp` gives one (default: the wall clock). */
  now?: Date;
  /** The secret patient pseudonyms are keyed with (pseudonymSecret(); unset: a random one for this process). */
  pseudonymSecret?: Buffer | string;
  /** The date the record is asked about (a CDS Hooks call's time): ages are computed at it, whatever the bundle says. */
  referenceDate?: string;
  /**
   * false: no reference is refused, whatever the bundle type. A CDS Hooks prefetch is a set
   * of searches the service assembled, not a record the EHR closed.
   */
  closedBundle?: boolean;
  /** The patient the record must be about when it holds no Patient (a CDS hook's context.patientId): another's resources are left out. */
  patientId?: string;
  notesBudget?: number;
  maxResources?: number;
  maxDepth?: number;
}

/** `details.reason` of the refusal of a bundle from which no clinical fact was read. */
export const NO_CLINICAL_FACTS = "no-clinical-facts";

/**
 * Whether an error is the refusal of a bundle (or a CDS Hooks prefetch) that holds no
 * clinical fact: an empty bundle, a Patient alone, a server's OperationOutcome. A hook answers
 * it as missing data; /diagnose answers it 422.
 */
export function isNoClinicalFactsRefusal(err: unknown): boolean {
  return isMedmmvError(err) && err.details?.reason === NO_CLINICAL_FACTS;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === "object" && !Array.isArray(v);
}

/** Bundle.link[self].url: the search a searchset answers (its patient, when no Patient came with it). */
function selfLinkOf(body: unknown): string | undefined {
  const links = isObject(body) && Array.isArray(body.link) ? body.link : [];
  const self = links.find((l): l is Record<string, unknown> => isObject(l) && l.relation === "self" && typeof l.url === "string");
  return self ? (self.url as string).slice(0, 4000) : undefined;
}

type ReadEntry = { entry: IndexedEntry; type: ReadType; resource: unknown };

/**
 * The envelope: a Bundle, R4, of a type we read, no deeper than the limit. Checked on the
 * raw body before any schema walks it, so an absurd shape costs one linear pass.
 */
function* readEnvelope(body: unknown, maxDepth: number): Generator<void, BundleEnvelope> {
  if (!isObject(body)) throw fhirError("INVALID_INPUT", [{ path: "Bundle", message: "the body must be a JSON object: a FHIR Bundle", fhirCode: "structure" }]);
  if (body.resourceType !== "Bundle") {
    const what = typeof body.resourceType === "string" ? `a ${body.resourceType.slice(0, 64)}` : "no resourceType";
    throw fhirError("INVALID_INPUT", [{ path: "Bundle.resourceType", message: `expected a Bundle, got ${what}; wrap the patient's resources in a Bundle of type collection`, fhirCode: "structure" }]);
  }
  const entries = Array.isArray(body.entry) ? body.entry : [];
  if (entries.length > MAX_BUNDLE_ENTRIES) {
    throw fhirError("PAYLOAD_TOO_LARGE", [{ path: "Bundle.entry", message: `the bundle holds ${entries.length} entries; the limit is ${MAX_BUNDLE_ENTRIES}`, fhirCode: "too-costly" }]);
  }
  // Bundle → entry[] → entry → resource: three levels before a resource's own.
  const { entry: _entries, ...rest } = body;
  const shallow = nestingTooDeep(rest, maxDepth);
  if (shallow) throw tooDeep("Bundle", shallow, maxDepth);
  const raw: Array<{ at: string; resource: Record<string, unknown> }> = [];
  for (let i = 0; i < entries.length; i++) {
    if (i % STEP === 0) yield;
    const deep = nestingTooDeep(entries[i], maxDepth + 1);
    if (deep) throw tooDeep(`Bundle.entry[${i}]`, deep, maxDepth);
    const res = isObject(entries[i]) ? (entries[i] as Record<string, unknown>).resource : undefined;
    if (isObject(res)) raw.push({ at: `Bundle.entry[${i}].resource`, resource: res });
  }
  const version = otherVersion(raw, body);
  if (version) throw fhirError("INVALID_INPUT", [version]);
  const head = BundleEnvelopeHead.safeParse(body);
  if (!head.success) throw fhirError("INVALID_INPUT", zodToFhirIssues(head.error, "Bundle", body));
  // Entry by entry, with the event loop free between slices: one parse of every entry would hold it for the whole bundle.
  const checked: BundleEntry[] = [];
  const issues: FhirIssue[] = [];
  for (let i = 0; i < entries.length; i++) {
    if (i % STEP === 0) yield;
    const e = BundleEntry.safeParse(entries[i]);
    if (e.success) checked.push(e.data);
    else if (issues.push(...zodToFhirIssues(e.error, `Bundle.entry[${i}]`, entries[i])) > 100) break;
  }
  if (issues.length) throw fhirError("INVALID_INPUT", issues);
  const { entry: _unchecked, ...envelope } = head.data;
  return { ...envelope, ...(Array.isArray(body.entry) ? { entry: checked } : {}) };
}

function tooDeep(at: string, found: { path: PropertyKey[]; depth: number }, limit: number): MedmmvError {
  return fhirError("INVALID_INPUT", [{ path: fhirPath(at, found.path), message: `nests deeper than ${limit} levels of objects and arrays; no FHIR resource needs that (check the exporter)`, fhirCode: "too-costly" }]);
}

/** Counts per resource type of what is not read, as the list the case's metadata keeps. */
function unreadList(unread: Map<string, IndexedEntry[]>): IgnoredResource[] {
  return [...unread].map(([type, list]) =>
    list.length === 1 ? { resource: list[0]!.name, reason: `resource type ${type} is not read` } : { resource: type, reason: `resource type ${type} is not read (${list.length} resources)` },
  );
}

/**
 * Element-level checks of every resource we read; problems are collected, not stopped at.
 * What nothing clinical depends on (an id R4 would not allow, an extension, a reference that
 * does not resolve where R4 does not require it to) degrades that element and is listed in
 * `degraded`; what R4 forbids refuses the bundle, naming the rule.
 */
function* checkResources(
  index: BundleIndex,
  closed: boolean,
  maxResources: number,
  anchor: { patientId?: string | undefined; selfLink?: string | undefined },
): Generator<void, { read: ReadEntry[]; unread: Map<string, IndexedEntry[]>; outcomes: IndexedEntry[]; degraded: IgnoredResource[]; who: RecordPatient }> {
  const issues: FhirIssue[] = [...index.duplicates()];
  let read: ReadEntry[] = [];
  const unread = new Map<string, IndexedEntry[]>();
  const outcomes: IndexedEntry[] = [];
  const degraded: IgnoredResource[] = [];
  const extensions: ExtensionsFound = { count: 0, urls: new Set(), modifiers: [] };
  let step = 0;
  for (const e of index.entries) {
    if (++step % STEP === 0) yield;
    if (e.type === "OperationOutcome") {
      outcomes.push(e);
      continue;
    }
    if (!(e.type in READ_RESOURCES)) {
      const list = unread.get(e.type) ?? [];
      list.push(e);
      unread.set(e.type, list);
      continue;
    }
    if (read.length >= maxResources) {
      throw fhirError("PAYLOAD_TOO_LARGE", [{ path: e.at, message: `more than ${maxResources} resources of the types read (Claims, Provenance and other types not read are not counted); send one patient's record`, fhirCode: "too-costly" }]);
    }
    const modifiers = extensionsOf(e.resource, extensions).filter((url) => !UNDERSTOOD_MODIFIERS[e.type]?.has(url));
    if (modifiers.length) {
      degraded.push({ resource: e.name, reason: `not read: it carries a modifierExtension (${[...new Set(modifiers)].slice(0, 3).join(", ")}) that changes its meaning, and R4 forbids reading such a resource as if it were absent` });
      continue;
    }
    if (e.idProblem) degraded.push({ resource: e.name, reason: e.idProblem });
    const type = e.type as ReadType;
    // A choice element given twice is left out (the rest of the resource is read), and named.
    const { resource, twice } = withoutChoicesGivenTwice(e.resource);
    for (const t of twice) degraded.push({ resource: e.name, reason: `${t.path} is given twice (${t.keys.join(", ")}); R4 allows one value: that element is not read` });
    const parsed = READ_RESOURCES[type].safeParse(resource);
    if (!parsed.success) issues.push(...zodToFhirIssues(parsed.error, e.at, e.resource));
    else read.push({ entry: e, type, resource: parsed.data });
    if (issues.length > 100) break;
  }
  if (issues.length) throw fhirError("INVALID_INPUT", issues);
  const who = recordPatient(
    read.filter((r) => r.type === "Patient").map((r) => r.entry),
    index,
    anchor,
  );
  // A document's entries of another patient refuse it (the reference rules below); in any other bundle they are left out, and said.
  const document = closed && index.rule === "self-contained";
  const ofThePatient: ReadEntry[] = [];
  for (const r of read) {
    if (++step % STEP === 0) yield;
    if (r.type === "Patient" && r.entry !== who.entries[0]) {
      degraded.push({ resource: r.entry.name, reason: `the same patient as ${who.entries[0]!.name} (Patient.link or an identifier in common): read as one` });
    } else if (!document && ofAnotherPatient(r.entry, who, index)) {
      // By type and position only: its id may be the other patient's (Oracle's `FamilyMemberHistory/<patient id>-1`).
      degraded.push({ resource: `${r.type} (${r.entry.at.replace(/\.resource$/, "")})`, reason: OTHER_PATIENT_REASON });
    } else ofThePatient.push(r);
  }
  read = ofThePatient;
  if (closed) {
    const refused: FhirIssue[] = [];
    for (const r of read) {
      if (++step % STEP === 0) yield;
      const found = index.referenceFindings(r.entry, who.entries.length > 0);
      refused.push(...found.refused);
      for (const d of found.degraded) degraded.push({ resource: r.entry.name, reason: `${d.path.slice(r.entry.at.length + 1)}: ${d.message}` });
      if (refused.length >= 50) break;
    }
    if (refused.length) throw fhirError("UNPROCESSABLE", refused);
  }
  if (extensions.count) {
    const urls = [...extensions.urls];
    degraded.push({ resource: "Bundle", reason: `${extensions.count} extension${extensions.count === 1 ? "" : "s"} not read (${urls.slice(0, 5).join(", ")}${urls.length > 5 ? `, and ${urls.length - 5} more kinds` : ""}): extensions add to an element, the element itself is read` });
  }
  return { read, unread, outcomes, degraded, who };
}

/** What a record of only empty lines holds, in words for the refusal. */
const EMPTY_WORDS: Record<EmptyKind, string> = {
  "no-information": "all its sections and entries say no information is available",
  "link-only": "its documents and images hold only links to other servers, which are not fetched (send their text or data inline)",
  "advance-directive": "an advance directive, which is not a clinical finding",
};

/** The refusal of a bundle that holds nothing a diagnosis could be made from. */
function noFacts(bundleType: string, entries: number, outcomes: IndexedEntry[], read: ReadEntry[], unread: Map<string, IndexedEntry[]>, empty: Set<EmptyKind>, dropped: IgnoredResource[]): MedmmvError {
  let message: string;
  if (empty.size) {
    const order: EmptyKind[] = ["no-information", "link-only", "advance-directive"];
    const said = order.filter((k) => empty.has(k)).map((k) => EMPTY_WORDS[k]);
    message = `nothing readable: ${said.join("; besides, ")}; a diagnosis needs at least one Condition, Observation, medication, procedure, report or note with content`;
  } else if (outcomes.length && !read.length && !unread.size) {
    const said = outcomes
      .flatMap((o) => (Array.isArray(o.resource.issue) ? o.resource.issue : []))
      .map((i) => (isObject(i) ? (typeof i.diagnostics === "string" ? i.diagnostics : isObject(i.details) && typeof i.details.text === "string" ? i.details.text : typeof i.code === "string" ? i.code : "") : ""))
      .find(Boolean);
    message = `the ${bundleType} holds only an OperationOutcome${said ? ` (the server said: "${said.replace(/\s+/g, " ").slice(0, 120)}")` : ""}, no patient record: search again, or send the patient's resources`;
  } else if (!entries) {
    message = `the ${bundleType} bundle is empty: send the patient's record (Conditions, Observations, medications, notes)`;
  } else {
    const types = [...new Set([...read.map((r) => r.type), ...unread.keys()])].slice(0, 8).join(", ");
    message = `no clinical fact was read from the bundle (it holds ${types || "no resources"}); a diagnosis needs at least one Condition, Observation, medication, procedure, report or note`;
  }
  // What was dropped is named too: a record whose facts were all in entries without a resource must not look empty.
  if (dropped.length) message += `; ${dropped.length} entr${dropped.length === 1 ? "y has" : "ies have"} no resource and ${dropped.length === 1 ? "was" : "were"} skipped (${dropped.slice(0, 5).map((d) => `${d.resource} ${d.reason.replace(/^has no resource /, "").replace(/: skipped$/, "")}`).join(", ")}${dropped.length > 5 ? ", …" : ""})`;
  return fhirError("UNPROCESSABLE", [{ path: "Bundle.entry", message, fhirCode: "processing" }], NO_CLINICAL_FACTS);
}

/**
 * A FHIR R4 Bundle of one patient's record → the ClinicalCase the pipeline reads: the
 * patient's age and sex, notes of one readable line per fact (each naming its resource,
 * summarised to the notes budget, free text de-identified), and the record's images.
 * Anything we cannot accept is refused with the FHIRPath of the element to fix. A generator
 * so the server can read a large record in slices (bundleToCaseYielding); bundleToCase
 * runs it in one go.
 */
function* readBundle(body: unknown, opts: BundleToCaseOptions): Generator<void, ClinicalCase> {
  const maxDepth = opts.maxDepth ?? FHIR_DEFAULTS.maxDepth;
  const envelope = yield* readEnvelope(body, maxDepth);
  const index = new BundleIndex(envelope.type);
  const ignored: IgnoredResource[] = [];
  const entries = envelope.entry ?? [];
  for (let i = 0; i < entries.length; i++) {
    if (i % STEP === 0) yield;
    const en = entries[i]!;
    if (en.search?.mode === "outcome" && en.resource?.resourceType === "OperationOutcome") {
      index.add(i, en.resource as Record<string, unknown>, en.fullUrl); // a server's search warnings: read only if nothing else is there
      continue;
    }
    if (!en.resource) {
      // A transaction's DELETE, a batch's GET: a request, not a record.
      const req = en.request ? `${en.request.method ?? "?"} ${(en.request.url ?? "").slice(0, 120)}`.trim() : "no request";
      ignored.push({ resource: `Bundle.entry[${i}]`, reason: `has no resource (${req}): skipped` });
      continue;
    }
    // A history lists a resource once per version, newest first (FHIR R4 http.html#history): the first is the record.
    const res = en.resource as Record<string, unknown>;
    if (envelope.type === "history" && typeof res.id === "string" && index.has(`${res.resourceType}/${res.id}`)) {
      ignored.push({ resource: `Bundle.entry[${i}]`, reason: `an older version of ${res.resourceType}/${res.id}: skipped` });
      continue;
    }
    index.add(i, res, en.fullUrl);
  }
  const selfLink = selfLinkOf(body);
  const { read, unread, outcomes, degraded, who } = yield* checkResources(index, opts.closedBundle ?? true, opts.maxResources ?? FHIR_DEFAULTS.maxResources, { patientId: opts.patientId, selfLink });
  ignored.push(...degraded);

  // Age is the patient's age when the record is asked about: the caller's date (a CDS hook's call), else the
  // time the sender stamped the record with (a document's assembly), else now — never the last clinical date,
  // which moves with whatever the sender left out.
  const referenceDate = opts.referenceDate ?? envelope.timestamp ?? (opts.now ?? new Date()).toISOString();

  const images: ImageInput[] = [];
  const consumed = new Set<string>();
  const lines: RenderedLine[] = [];

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
    // The same detection as every other intake path (a DICOM dataset without its preamble included);
    // the bytes go on as sent, and image intake reads them the same way.
    if (!recogniseImage(bytes)) throw fhirError("UNSUPPORTED_MEDIA", [{ path: at, message: "is not an image: accepted formats are JPEG, PNG, GIF, WebP and DICOM (Part 10, or its dataset without the preamble; read from the bytes, not contentType)", fhirCode: "not-supported" }]);
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
        if (type === "text/html" || type === "application/xhtml+xml") return htmlText(got.bytes.toString("utf8"));
        if (type === undefined || type.startsWith("text/")) return got.bytes.toString("utf8");
        ctx.ignore(`${where} is ${type.slice(0, 100)}, which is not read (text and images are)`);
        return undefined;
      },
      image: (att, path, caption, id) => {
        const got = attachmentBytes(e, att, path, opts.maxImageBytes);
        if ("link" in got) {
          // A picture on another server is not fetched (only a DICOMweb ImagingStudy on an allow-listed PACS is): left out, and said.
          const where = fhirPath("", [...path, att.url ? "url" : "data"]).replace(/^\./, "");
          ctx.ignore(att.url ? `${where} points at an image outside the bundle (${att.url.slice(0, 200)}): not fetched, the image is left out` : `${where}: the image has no data: left out`);
          return false;
        }
        addImage(id, got.bytes, got.at, caption);
        return true;
      },
    };
    return ctx;
  };
  // Rendered first and scrubbed once all are in: a name one narrative labels as the patient's is scrubbed from every line.
  const raw: Array<{ line: NoteLine; r: ReadEntry; order: number }> = [];
  const render = (r: ReadEntry, order: number) => {
    const line = (RENDERERS[r.type] as (x: unknown, c: RenderContext) => NoteLine | null)(r.resource, contextFor(r.entry));
    if (line) raw.push({ line, r, order });
  };
  // A Binary read through an attachment belongs to that resource; only the rest stand alone (as images).
  for (let i = 0; i < read.length; i++) {
    if (i % STEP === 0) yield;
    if (read[i]!.type !== "Binary") render(read[i]!, i);
  }
  for (let i = 0; i < read.length; i++) if (read[i]!.type === "Binary" && !consumed.has(read[i]!.entry.name)) render(read[i]!, i);

  const learnedNames = new Set<string>();
  for (let i = 0; i < raw.length; i++) {
    if (i % STEP === 0) yield;
    const { line } = raw[i]!;
    for (const t of [line.text, ...(line.body ?? [])]) for (const n of labelledNames(t)) if (learnedNames.size < MAX_LEARNED_NAMES) learnedNames.add(n);
  }
  const displays = yield* patientDisplays(index, who);
  const scrub = scrubberFor(
    who.entries.map((e) => e.resource),
    unread.get("RelatedPerson")?.map((e) => e.resource) ?? [],
    {
      learnedNames: [...learnedNames],
      // A relative's name (FamilyMemberHistory.name) is a person's name too, and often the patient's family name.
      statedNames: [...displays, ...read.filter((r) => r.type === "FamilyMemberHistory").flatMap((r) => (typeof r.entry.resource.name === "string" ? [r.entry.resource.name.slice(0, 200)] : []))],
      patientIds: [...who.ids],
      resourceNames: index.entries.map((e) => e.name),
      ...(opts.pseudonymSecret ? { secret: opts.pseudonymSecret } : {}),
    },
  );
  for (let i = 0; i < raw.length; i++) {
    if (i % STEP === 0) yield;
    const { line, r, order } = raw[i]!;
    // A document's lines are scrubbed together: a name hyphenated at a line's end continues on the next.
    const body = line.body ? scrub.text(line.body.join("\n")).split("\n") : undefined;
    const series = line.series ? { ...line.series, reading: scrub.text(line.series.reading) } : undefined;
    lines.push({ ...line, text: scrub.text(line.text), ...(body ? { body } : {}), ...(series ? { series } : {}), name: scrub.name(r.entry.name), type: r.type, order });
  }

  // ImagingStudy with a DICOMweb Endpoint: its pictures are fetched at intake (src/core/intake/dicom).
  for (const { image, at } of imagingStudyImages(index.entries, (ref) => index.resolve(ref))) {
    if (images.length >= MAX_IMAGES) throw fhirError("PAYLOAD_TOO_LARGE", [{ path: at, message: `more than ${MAX_IMAGES} images in the bundle; send the ${MAX_IMAGES} most relevant`, fhirCode: "too-costly" }]);
    images.push(image);
    imagePaths[image.id] = at;
  }

  const facts = lines.filter((l) => l.group !== "patient" && !l.empty).length + images.length;
  if (!facts) throw noFacts(envelope.type, entries.length, outcomes, read, unread, new Set(lines.flatMap((l) => l.empty ?? [])), ignored.filter((i) => /^Bundle\.entry\[\d+\]$/.test(i.resource) && i.reason.startsWith("has no resource")));
  const budget = opts.notesBudget ?? FHIR_DEFAULTS.notesBudget;
  // The dates the summary writes itself ("since …" of a trend) go through the same rules as the record's text.
  const summary = yield* summariseNotesSteps(lines, budget, scrub.text);
  const notes = summary.notes;
  for (const img of images) if (img.caption) img.caption = scrub.text(img.caption);
  // Image ids and paths name their resource: an id that spells a name is replaced there too.
  for (const img of images) {
    const id = scrub.text(img.id);
    if (id !== img.id && imagePaths[img.id] !== undefined) {
      imagePaths[id] = imagePaths[img.id]!;
      delete imagePaths[img.id];
    }
    img.id = id;
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
  // What was not read is named as the notes name it: pseudonymous where the id is the patient's or spells a name.
  const allIgnored = [...ignored, ...unreadList(unread)].map((i) => ({ resource: scrub.text(scrub.name(i.resource)), reason: scrub.text(i.reason) }));
  const listed = allIgnored.length > MAX_IGNORED_LISTED ? [...allIgnored.slice(0, MAX_IGNORED_LISTED - 1), { resource: "Bundle", reason: `and ${allIgnored.length - MAX_IGNORED_LISTED + 1} more resources or parts not used` }] : allIgnored;
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
        // Pseudonymous like the notes; the export maps it back (pseudonyms).
        ...(patientEntry ? { patient: patientEntry.entry.resource.id === undefined && patientEntry.entry.fullUrl ? scrub.text(patientEntry.entry.fullUrl) : scrub.name(patientEntry.entry.name) } : {}),
        referenceDate,
        resources: index.entries.length,
        ignoredResources: listed,
        ...(images.length ? { imagePaths } : {}),
        notes: { budget, chars: notes.length, summarised: summary.summarised, leftOut: summary.leftOut, duplicates: summary.duplicates },
        ...(Object.keys(scrub.pseudonyms).length ? { pseudonyms: scrub.pseudonyms } : {}),
      } satisfies FhirOrigin,
    },
  };
  return c;
}

/** The case of a bundle, read in one go (tests, the CLI, a CDS Hooks prefetch already in memory). */
export function bundleToCase(body: unknown, opts: BundleToCaseOptions): ClinicalCase {
  const steps = readBundle(body, opts);
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
  }
}

/**
 * The case of a bundle, read in slices of a few milliseconds with the event loop free in
 * between: a 25 MiB `$everything` record must not stall /healthz or other requests.
 */
export async function bundleToCaseYielding(body: unknown, opts: BundleToCaseOptions): Promise<ClinicalCase> {
  const steps = readBundle(body, opts);
  let sliceStart = performance.now();
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
    if (performance.now() - sliceStart > SLICE_MS) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      sliceStart = performance.now();
    }
  }
}
