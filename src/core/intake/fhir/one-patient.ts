import type { BundleIndex, IndexedEntry } from "./bundle-index.js";
import { fhirError } from "./fhir-error.js";

/**
 * One patient per case, whatever the bundle type. A searchset answer, a collection, a
 * transaction, a history or a CDS Hooks prefetch can hold another patient's resource (an
 * EHR's search that matched more than asked, a merged export); a document is refused for it
 * by the reference rules (bundle-index.ts). Here every resource whose `subject` or `patient`
 * names a patient who is not the record's is left out before anything renders it, and the
 * case lists it; two Patients that are not the same person refuse the record.
 */

type Json = Record<string, unknown>;

/** Why a resource of another patient is not read: the case's ignoredResources and the card's "Not read" say it. */
export const OTHER_PATIENT_REASON = "about another patient (its subject is not this record's patient): not read";

/** The elements that say whose record a resource belongs to (R4: `subject` on most, `patient` on the rest). */
const PATIENT_ELEMENTS = ["subject", "patient"] as const;

const RELATIVE_PATIENT = /^(?:https?:\/\/\S+\/)?Patient\/([A-Za-z0-9\-.]{1,256})(?:\/_history\/[A-Za-z0-9\-.]{1,64})?$/;

function isObject(v: unknown): v is Json {
  return !!v && typeof v === "object" && !Array.isArray(v);
}

/** `system|value` of every identifier of a resource or Reference.identifier. */
function identifierKeys(v: unknown): string[] {
  const list = Array.isArray(v) ? v : v ? [v] : [];
  const out: string[] = [];
  for (const i of list) if (isObject(i) && typeof i.value === "string" && i.value) out.push(`${typeof i.system === "string" ? i.system : ""}|${i.value}`);
  return out;
}

/** The Patients that are one person: joined by Patient.link (either way) or by an identifier in common. */
function samePerson(a: IndexedEntry, b: IndexedEntry, index: BundleIndex): boolean {
  const links = (p: IndexedEntry) => (Array.isArray(p.resource.link) ? p.resource.link : []).map((l) => (isObject(l) && isObject(l.other) && typeof l.other.reference === "string" ? index.resolve(l.other.reference) : undefined));
  if (links(a).includes(b) || links(b).includes(a)) return true;
  const ids = new Set(identifierKeys(a.resource.identifier));
  return identifierKeys(b.resource.identifier).some((k) => ids.has(k));
}

/** Who the record is about, as the references to them may be written. */
export interface RecordPatient {
  /** The Patient entries of the record (one person: the first, and any linked to it). */
  entries: IndexedEntry[];
  /** Patient ids a reference may name them by (`Patient/<id>`, an absolute URL ending so). */
  ids: Set<string>;
  /** `system|value` identifiers a reference may name them by. */
  identifiers: Set<string>;
}

/** The Patient a reference names, as `{ id }`, `{ entry }` in the bundle, or null when it names no Patient (a Group, a display only). */
function patientNamed(ref: Json, index: BundleIndex): { entry?: IndexedEntry; id?: string; identifier?: string[] } | null {
  const literal = typeof ref.reference === "string" ? ref.reference : undefined;
  if (literal) {
    const target = index.resolve(literal);
    if (target) return target.type === "Patient" ? { entry: target } : null;
    const m = RELATIVE_PATIENT.exec(literal);
    if (m) return { id: m[1]! };
    return null;
  }
  const idents = identifierKeys(ref.identifier);
  if (idents.length && (ref.type === undefined || ref.type === "Patient")) return { identifier: idents };
  return null;
}

/** The patient references of a resource: its `subject` and `patient`. */
function patientReferences(e: IndexedEntry): Json[] {
  const out: Json[] = [];
  for (const k of PATIENT_ELEMENTS) {
    const v = e.resource[k];
    for (const r of Array.isArray(v) ? v : [v]) if (isObject(r)) out.push(r);
  }
  return out;
}

/** A patient id the bundle's own search link names (`Condition?patient=123`, `…&subject=Patient/123`). */
function searchedPatient(selfLink: string | undefined): string | undefined {
  if (!selfLink) return undefined;
  let url: URL;
  try {
    url = new URL(selfLink, "http://x/");
  } catch {
    return undefined;
  }
  const params = url.searchParams;
  // `_id` names the patient only in a search of Patients; `Condition?_id=abc` names a condition.
  const names = /\/Patient\/?$/.test(url.pathname) ? ["patient", "subject", "patient._id", "_id"] : ["patient", "subject", "patient._id"];
  for (const name of names) {
    const v = params.get(name);
    const id = v?.replace(/^Patient\//, "");
    if (id && /^[A-Za-z0-9\-.]{1,256}$/.test(id)) return id;
  }
  return undefined;
}

/**
 * The record's patient: its Patient resources (refused when two are not one person), else
 * the patient the caller names (a CDS hook's context), else the one its search link asked
 * for, else the one patient its resources reference (refused when they reference two).
 */
export function recordPatient(patients: IndexedEntry[], index: BundleIndex, opts: { patientId?: string | undefined; selfLink?: string | undefined }): RecordPatient {
  const [first, ...rest] = patients;
  const entries = first ? [first] : [];
  for (const p of rest) {
    if (!samePerson(first!, p, index)) {
      throw fhirError("UNPROCESSABLE", [
        {
          path: p.at,
          message: `two Patients who are not the same person: ${first!.name} (${first!.at}) and ${p.name} (${p.at}), with no Patient.link between them and no identifier in common; a case is one patient's record${index.rule === "self-contained" ? " (and a document has one subject: FHIR R4 Composition.subject, documents.html)" : ""}`,
          fhirCode: "invariant",
        },
      ]);
    }
    entries.push(p);
  }
  const ids = new Set<string>();
  const identifiers = new Set<string>();
  for (const p of entries) {
    if (typeof p.resource.id === "string") ids.add(p.resource.id);
    const byUrl = p.fullUrl ? RELATIVE_PATIENT.exec(p.fullUrl) : null;
    if (byUrl) ids.add(byUrl[1]!);
    for (const k of identifierKeys(p.resource.identifier)) identifiers.add(k);
  }
  const anchor = entries.length ? undefined : (opts.patientId ?? searchedPatient(opts.selfLink));
  if (anchor) ids.add(anchor);
  if (!entries.length && !anchor) {
    // No Patient and nobody named: the record is about the one patient its resources reference, if they reference one.
    const named = new Map<string, IndexedEntry>();
    for (const e of index.entries) for (const r of patientReferences(e)) {
      const who = patientNamed(r, index);
      if (who?.id && !named.has(who.id)) named.set(who.id, e);
    }
    if (named.size > 1) {
      const [[a, ea], [b, eb]] = [...named] as [[string, IndexedEntry], [string, IndexedEntry]];
      throw fhirError("UNPROCESSABLE", [
        { path: eb.at, message: `the record's resources are about two patients (Patient/${a} at ${ea.at}, Patient/${b} at ${eb.at}) and it holds no Patient to say whose record it is; a case is one patient's record: send one patient's resources, with their Patient`, fhirCode: "invariant" },
      ]);
    }
    for (const id of named.keys()) ids.add(id);
  }
  return { entries, ids, identifiers };
}

/** Whether a resource is about another patient than the record's: one of its patient references names someone else. */
export function ofAnotherPatient(e: IndexedEntry, who: RecordPatient, index: BundleIndex): boolean {
  if (e.type === "Patient") return false;
  for (const r of patientReferences(e)) {
    const named = patientNamed(r, index);
    if (!named) continue;
    if (named.entry) {
      if (!who.entries.includes(named.entry)) return true;
    } else if (named.id !== undefined) {
      // A Patient known only by a urn:uuid cannot be told from a `Patient/<id>` reference: not judged.
      if (who.ids.size && !who.ids.has(named.id)) return true;
    } else if (named.identifier && who.identifiers.size && !named.identifier.some((k) => who.identifiers.has(k))) return true;
  }
  return false;
}

/** Whether a Reference names the record's patient. */
function namesThePatient(ref: Json, who: RecordPatient, index: BundleIndex): boolean {
  const named = patientNamed(ref, index);
  if (!named) return false;
  if (named.entry) return who.entries.includes(named.entry);
  if (named.id !== undefined) return who.ids.has(named.id);
  return !!named.identifier?.some((k) => who.identifiers.has(k));
}

/** Displays kept, at most: one patient's record writes their name a handful of ways. */
const MAX_DISPLAYS = 50;

/**
 * The `display` of every reference to the record's patient, anywhere in its resources
 * ("SMART, NANCY" on an Oracle Condition's subject): how the record names the patient where
 * it holds no Patient, or a Patient without a name. Walked without recursion.
 */
export function* patientDisplays(index: BundleIndex, who: RecordPatient): Generator<void, string[]> {
  const out = new Set<string>();
  let step = 0;
  for (const e of index.entries) {
    // A generator like the rest of the intake: the server reads a large record in slices.
    if (++step % 25 === 0) yield;
    const stack: unknown[] = [e.resource];
    while (stack.length && out.size < MAX_DISPLAYS) {
      const v = stack.pop();
      if (!v || typeof v !== "object") continue;
      if (Array.isArray(v)) {
        stack.push(...v);
        continue;
      }
      const o = v as Json;
      if (typeof o.display === "string" && (typeof o.reference === "string" || o.identifier) && namesThePatient(o, who, index)) out.add(o.display.slice(0, 200));
      for (const k of Object.keys(o)) if (o[k] && typeof o[k] === "object") stack.push(o[k]);
    }
  }
  return [...out];
}
