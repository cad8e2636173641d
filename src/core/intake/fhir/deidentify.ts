import { createHash } from "node:crypto";

/**
 * Free-text de-identification of what a bundle says about the people in it. Structured
 * demographics never reach the notes (only age and sex do); free text does — Synthea's notes
 * begin "Bob965 is a 45 year-old…" — so every narrative, attachment and note text is scrubbed
 * of what the bundle itself states about the patient and related persons: every name part
 * (any case, with or without the digit suffixes Synthea appends), address lines, city and
 * postal code, telecom values, identifier values (MRN, SSN, licence, passport) and the
 * birth date in the ways it is commonly written. What the bundle does not state cannot be
 * found this way; this is not a general-purpose PHI detector.
 */
export interface Scrubber {
  /** Free text with every stated identifier replaced by a bracketed placeholder. */
  text(s: string): string;
  /** A resource name with the patient's id replaced by its pseudonym where that id is also an identifier value. */
  name(resourceName: string): string;
  /** pseudonymous resource name → the name the EHR knows, for the export back to it. */
  pseudonyms: Record<string, string>;
}

type Json = Record<string, unknown>;

const MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"];
/** More terms than this and the bundle is not one patient's record; the scrub stays bounded. */
const MAX_TERMS = 400;

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : typeof v === "string" ? [v] : [];
}

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** A literal whose whitespace may be written any way (line breaks in a note). */
function literal(s: string): string {
  return s.trim().split(/\s+/).map(escape).join("\\s+");
}

/** A mostly-numeric value (phone, SSN) matched whatever separators the text writes between its digits. */
function digitsLoose(s: string): string | null {
  const digits = s.replace(/\D/g, "");
  if (digits.length < 5 || digits.length < s.replace(/[\s().+-]/g, "").length) return null;
  return digits.split("").join("[\\s().-]{0,3}");
}

/** Patterns for the `value`s of a ContactPoint or Identifier list: as written, and digits with any separators. */
function valuePatterns(list: unknown): string[] {
  const out: string[] = [];
  for (const item of Array.isArray(list) ? list : []) {
    const v = item && typeof item === "object" ? (item as Json).value : undefined;
    if (typeof v !== "string" || v.trim().length < 3) continue;
    out.push(literal(v));
    const loose = digitsLoose(v);
    if (loose) out.push(loose);
  }
  return out;
}

/** "Bob965" → "Bob": Synthea appends digits to every name part so that names are unique. */
function nameBase(part: string): string {
  return part.replace(/\d+$/, "");
}

function namesOf(resource: Json): string[] {
  const out: string[] = [];
  const names = Array.isArray(resource.name) ? resource.name : resource.name ? [resource.name] : [];
  for (const n of names) {
    if (!n || typeof n !== "object") continue;
    const hn = n as Json;
    for (const part of [...strings(hn.given), ...strings(hn.family), ...strings(hn.text)]) {
      for (const piece of part.split(/[\s,]+/)) {
        out.push(piece);
        if (piece.includes("-")) out.push(...piece.split("-"));
      }
    }
  }
  return out;
}

function birthDatePatterns(birthDate: string): string[] {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(birthDate);
  if (!m) return /^\d{4}-\d{2}$/.test(birthDate) ? [escape(birthDate)] : [];
  const [, y, mo, d] = m as unknown as [string, string, string, string];
  const mi = Number(mo);
  const di = Number(d);
  const month = MONTHS[mi - 1]!;
  const monthRe = `(?:${month}|${month.slice(0, 3)}\\.?)`;
  const mm = `0?${mi}`;
  const dd = `0?${di}`;
  return [
    `${y}-${mo}-${d}(?:T[0-9:.+Z-]*)?`,
    `${mm}[/.-]${dd}[/.-](?:${y}|${y.slice(2)})`,
    `${dd}[/.-]${mm}[/.-](?:${y}|${y.slice(2)})`,
    `${y}${mo}${d}`,
    `${monthRe}\\s+${dd}(?:st|nd|rd|th)?,?\\s+${y}`,
    `${dd}(?:st|nd|rd|th)?\\s+(?:of\\s+)?${monthRe},?\\s+${y}`,
  ];
}

/** One pass: every pattern of a kind, longest first, bounded by non-alphanumerics. */
function pass(patterns: string[], replacement: string | ((m: string) => string)): ((s: string) => string) | null {
  const uniq = [...new Set(patterns)].sort((a, b) => b.length - a.length).slice(0, MAX_TERMS);
  if (!uniq.length) return null;
  const re = new RegExp(`(?<![\\p{L}\\p{N}])(?:${uniq.join("|")})(?![\\p{L}\\p{N}])`, "giu");
  return (s) => s.replace(re, replacement as string);
}

/** A stable opaque name for a patient id: the same id gives the same pseudonym in every case. */
export function patientPseudonym(id: string): string {
  return `pt-${createHash("sha256").update(`medmmv-patient:${id}`).digest("hex").slice(0, 16)}`;
}

/**
 * The scrubber for a bundle, from its Patient (names, contacts, address, telecom,
 * identifiers, birth date) and the RelatedPersons it holds.
 */
export function scrubberFor(patients: Json[], related: Json[]): Scrubber {
  const names: string[] = [];
  const addresses: string[] = [];
  const telecom: string[] = [];
  const identifiers: string[] = [];
  const births: string[] = [];
  const people: Json[] = [...patients, ...related];
  for (const p of patients) for (const c of Array.isArray(p.contact) ? p.contact : []) if (c && typeof c === "object") people.push(c as Json);
  for (const person of people) {
    for (const part of namesOf(person)) {
      const base = nameBase(part.replace(/[.'’]+$/, ""));
      // One-letter initials and empty parts would scrub every "a" and "I".
      if (base.length >= 2) names.push(`${escape(base)}\\d*`);
    }
    const addrs = Array.isArray(person.address) ? person.address : person.address ? [person.address] : [];
    for (const a of addrs) {
      if (!a || typeof a !== "object") continue;
      const ad = a as Json;
      for (const v of [...strings(ad.line), ...strings(ad.city), ...strings(ad.postalCode), ...strings(ad.district), ...strings(ad.text)]) if (v.trim().length >= 3) addresses.push(literal(v));
    }
    telecom.push(...valuePatterns(person.telecom));
    identifiers.push(...valuePatterns(person.identifier));
    if (typeof person.birthDate === "string") births.push(...birthDatePatterns(person.birthDate));
  }

  // Synthea's MRN is the Patient.id: there the id itself is an identifier and gets a pseudonym.
  const pseudonyms: Record<string, string> = {};
  const idSwap = new Map<string, string>();
  for (const p of patients) {
    const id = typeof p.id === "string" ? p.id : undefined;
    if (!id) continue;
    const isIdentifier = (Array.isArray(p.identifier) ? p.identifier : []).some((i) => i && typeof i === "object" && (i as Json).value === id);
    if (!isIdentifier) continue;
    const pseudo = patientPseudonym(id);
    idSwap.set(id.toLowerCase(), pseudo);
    pseudonyms[`Patient/${pseudo}`] = `Patient/${id}`;
  }
  const ids = pass([...idSwap.keys()].map(escape), (m) => idSwap.get(m.toLowerCase()) ?? "[identifier]");
  const passes = [
    ids,
    pass(identifiers, "[identifier]"),
    pass(telecom, "[contact]"),
    pass(births, "[birth date]"),
    pass(addresses, "[address]"),
    pass(names, "[name]"),
  ].filter((f): f is (s: string) => string => f !== null);

  return {
    text: (s) => passes.reduce((acc, f) => f(acc), s),
    name: (n) => (ids ? ids(n) : n),
    pseudonyms,
  };
}
