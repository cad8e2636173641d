import { createHmac, randomBytes } from "node:crypto";

/**
 * Free-text de-identification of what a bundle says about the people in it. Structured
 * demographics never reach the notes (only age and sex do); free text does — Synthea's notes
 * begin "Bob965 is a 45 year-old…" — so every narrative, attachment and note text is scrubbed
 * of what the bundle itself states about the patient and related persons, and of the names
 * its narratives label as the patient's ("Patiënt: H. Jansen").
 *
 * Matching holds against how people write: text and terms are normalised first (full-width
 * forms as ASCII, format characters such as zero-width spaces and soft hyphens removed, every apostrophe one, letters
 * compared without their diacritics), so `O’Vantree`, `OVantree`, `Zoe` for `Zoë` and a name
 * split by a zero-width space are all the stated name; dates, phone numbers and identifiers
 * are matched in the forms they are written in. What neither the bundle nor a labelled field
 * states cannot be found this way: this is not a general-purpose PHI detector.
 */
export interface Scrubber {
  /** Free text with every stated identifier replaced by a bracketed placeholder. */
  text(s: string): string;
  /** A resource name with the patient's id replaced by its pseudonym where that id is also an identifier value. */
  name(resourceName: string): string;
  /** pseudonymous resource name → the name the EHR knows, for the export back to it. */
  pseudonyms: Record<string, string>;
}

export interface ScrubberOptions {
  /** The secret the patient pseudonyms are keyed with (HMAC-SHA256); see `pseudonymSecret`. */
  secret?: Buffer | string;
  /** Name parts found in the record's own text (labelled fields), scrubbed like the stated ones. */
  learnedNames?: readonly string[];
  /**
   * Names the record writes for the patient outside a Patient: the `display` of every
   * reference to them ("SMART, NANCY" where a search answer holds no Patient). Scrubbed in
   * every case, as the Patient's own names are.
   */
  statedNames?: readonly string[];
  /**
   * Every resource name of the record (`Type/id`): an id that holds a name part or an
   * identifier (`UKCore-Patient-RichardSmith-Example`) is replaced by an opaque one wherever
   * it is written, as the Patient's own id always is.
   */
  resourceNames?: readonly string[];
  /** Ids the record knows the patient by without a Patient resource (a search's `patient=`, a hook's context): pseudonymised like a Patient's. */
  patientIds?: readonly string[];
}

type Json = Record<string, unknown>;

/** Months in Roman numerals, as central European dates write them ("3.II.1951"); the longest first where one is a prefix of another. */
const ROMAN_MONTHS = ["I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII"];
const MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"];
/** More terms than this and the bundle is not one patient's record; the scrub stays bounded. */
const MAX_TERMS = 400;
/** Separators people write between the digits of a phone number or an identifier. */
const DIGIT_SEP = "[\\s().\\/-]{0,3}";

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : typeof v === "string" ? [v] : [];
}

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** Apostrophes, quotation marks used as apostrophes, and primes: all one `'`. */
const APOSTROPHES = /[\u2018\u2019\u201A\u201B\u02BC\u02BB\u02B9\u0060\u00B4\u2032\uFF07]/g;

/** Full-width ASCII (U+FF01–FF5E) and the ideographic space, as the ASCII they stand for. */
const FULL_WIDTH = /[\uFF01-\uFF5E\u3000]/g;

/**
 * Text as it is matched: full-width letters and digits as ASCII (the part of NFKC a name or
 * number written to evade a match uses; full NFKC would also turn `10⁹/L` into `109/L`),
 * format characters removed (zero-width spaces and joiners, soft hyphens, bidi marks), one
 * apostrophe, then decomposed (NFD) so that a letter's diacritics are separate marks a pattern
 * may skip.
 */
export function normaliseForMatching(s: string): string {
  return s
    .replace(FULL_WIDTH, (c) => (c === "\u3000" ? " " : String.fromCharCode(c.charCodeAt(0) - 0xfee0)))
    .replace(/\p{Cf}/gu, "")
    .replace(APOSTROPHES, "'")
    .normalize("NFD");
}

/** A term folded: normalised and without diacritics (`Zoë` → `Zoe`). */
export function foldTerm(s: string): string {
  return normaliseForMatching(s).replace(/\p{M}/gu, "");
}

/**
 * A pattern for a term as people write it: each letter with or without its diacritics, an
 * apostrophe optional (`O'Vantree`, `OVantree`), whitespace any, a hyphen a space or nothing.
 */
function loose(term: string, hyphenated = false): string {
  let out = "";
  const chars = [...foldTerm(term).trim()];
  chars.forEach((ch, i) => {
    if (ch === "'") out += "'?";
    else if (/\s/.test(ch)) out += "\\s+";
    else if (ch === "-") out += "[-\\s]?";
    else out += `${escape(ch)}\\p{M}*`;
    // A name broken over a line end by a hyphen ("O'Van-⏎tree", "Ri- chard" once the line is joined).
    if (hyphenated && i < chars.length - 1 && /\p{L}/u.test(ch) && /\p{L}/u.test(chars[i + 1]!)) out += "(?:-\\s+)?";
  });
  return out;
}

/** A mostly-numeric value (phone, SSN) matched whatever separators the text writes between its digits. */
function digitsLoose(s: string): string | null {
  const digits = s.replace(/\D/g, "");
  if (digits.length < 5 || digits.length < s.replace(/[\s().+\/-]/g, "").length) return null;
  return digits.split("").join(DIGIT_SEP);
}

/**
 * The digit core of an identifier (`MRN-440566` → 440566), written with any separators
 * (`4405 66`): at least five digits, so a short number in a note is not taken for one.
 */
function digitCore(s: string): string | null {
  const digits = s.replace(/\D/g, "");
  return digits.length >= 5 ? digits.split("").join(DIGIT_SEP) : null;
}

/** Patterns for the `value`s of a ContactPoint or Identifier list: as written, and digits with any separators. */
function valuePatterns(list: unknown, core: boolean): string[] {
  const out: string[] = [];
  for (const item of Array.isArray(list) ? list : []) {
    const v = item && typeof item === "object" ? (item as Json).value : undefined;
    if (typeof v !== "string" || v.trim().length < 3) continue;
    out.push(loose(v));
    const digits = core ? digitCore(v) : digitsLoose(v);
    if (digits) out.push(digits);
  }
  return out;
}

/**
 * A phone number as it may be written in its other forms: stated nationally ("0171 555 0199",
 * "(555) 010-9977") it may be written E.164 ("+441715550199", "+15550109977") or with the
 * international prefix ("0044 171 …"); stated E.164 it may be written nationally, with or
 * without the trunk 0. The number's national digits, with any separators, after an optional
 * country code and trunk prefix (0, or NANP's 1: "1-555-010-9977"). Seven digits at least: a
 * shorter run is not taken for one.
 */
function phonePatterns(value: string): string[] {
  const digits = value.replace(/\D/g, "");
  const nationals = new Set<string>();
  if (/^\s*(\+|00)/.test(value)) {
    const rest = value.trim().startsWith("+") ? digits : digits.slice(2);
    for (const cc of [1, 2, 3]) nationals.add(rest.slice(cc));
  } else nationals.add(digits.replace(/^0/, ""));
  const prefix = `(?:(?:\\+|00)\\s?\\d{1,3}${DIGIT_SEP})?(?:\\(?[01]\\)?${DIGIT_SEP})?`;
  return [...nationals].filter((n) => n.length >= 7).map((n) => `${prefix}${n.split("").join(DIGIT_SEP)}`);
}

/** "Bob965" → "Bob": Synthea appends digits to every name part so that names are unique. */
function nameBase(part: string): string {
  return part.replace(/\d+$/, "");
}

/**
 * The parts of one written name, as they may appear alone in text: "Anna-Lena de Vries" →
 * Anna-Lena, Anna, Lena, de, Vries.
 */
export function splitNameParts(written: string): string[] {
  const out: string[] = [];
  for (const piece of written.split(/[\s,^]+/)) {
    if (!piece) continue;
    out.push(piece);
    if (piece.includes("-")) out.push(...piece.split("-").filter(Boolean));
  }
  return out;
}

/** Every name part of a FHIR HumanName list (given, family, text), split as `splitNameParts` does. */
export function humanNameParts(names: unknown): string[] {
  const out: string[] = [];
  for (const n of Array.isArray(names) ? names : names ? [names] : []) {
    if (!n || typeof n !== "object") continue;
    const hn = n as Json;
    for (const part of [...strings(hn.given), ...strings(hn.family), ...strings(hn.text)]) out.push(...splitNameParts(part));
  }
  return out;
}

/** Name parts worth scrubbing: without trailing dots, apostrophes or Synthea digits; two letters or more (an initial would scrub every "a"). */
export function scrubbableNameParts(parts: readonly string[]): string[] {
  return parts
    .map((p) => nameBase(p.replace(/[.'’]+$/, "")))
    .filter((p) => foldTerm(p).replace(/[^\p{L}]/gu, "").length >= 2 && !TITLES.has(foldTerm(p).toLowerCase()) && !NAME_SUFFIXES.has(foldTerm(p).toLowerCase()));
}

/** Generational and academic suffixes ("Smart II, Nancy"): not the name, and "II" is also a type, a stage, a month. */
const NAME_SUFFIXES = new Set("jr sr ii iii iv v vi phd md".split(" "));

/**
 * Labels that introduce the patient's name in a narrative, in the languages of the records
 * medmmv reads (IPS documents from many countries): "Patient:", "Patiënt:", "Name:", "Naam:",
 * "Nom:", "Patientin:", "Paciente:", …. Matched on folded text, so "Patiënt" is "Patient".
 */
const NAME_LABEL = /(?<![\p{L}\p{N}])(?:patient(?:in|e|a)?|paciente|pasient|patient name|patient's name|name of patient|patientenname|nom(?: du patient)?|nombre|nome|name|naam|navn|namn|nimi|imie)\s*:\s*/giu;
/** Words after a label that are not a name (sex, placeholders, titles, and a few connecting words). */
const NOT_A_NAME = new Set(
  "male female man woman boy girl unknown anonymous none not no yes the a an of and homme femme mann vrouw hombre mujer masculino femenino masculin feminin mannlich weiblich onbekend inconnu unbekannt desconocido id age sex dob born date geboren".split(" "),
);
/** Titles before a name: skipped, the name follows. */
const TITLES = new Set("mr mrs ms miss mx dr prof sir madam herr frau mevrouw meneer dhr mevr mme mlle sr sra senor senora".split(" "));
/**
 * Words that make what follows a "Name:" label an organisation, a place or a system, not a
 * person: the whole span is then dropped (scrubbing "Health" or "Hospital" from every line
 * would cost the notes more than it protects).
 */
const NOT_A_PERSON = new Set(
  "hospital hospitals clinic clinics kliniek klinik klinikum health healthcare system systems care nursing doctor doctors practice practices centre center medical medicine laboratory laboratories laboratoire labor lab spital ziekenhuis hopital hôpital road street straat strasse department service services unit ward pharmacy apotheek apotheke generated qualifications organisation organization university universitat ltd inc gmbh bv ag sa plc".split(
    " ",
  ),
);
/** Lower-case particles that belong inside a name ("van der", "de la", "von"). */
const PARTICLES = new Set("van der den de la le du des von zu di da dos das del ten ter bin ibn al".split(" "));
/** The most name tokens read after one label. */
const MAX_LABELLED_TOKENS = 6;

/**
 * Name parts that the record's own text labels as the patient's: what follows "Patient:",
 * "Naam:", "Nom:" … up to the first token that is not part of a name (a lower-case word, a
 * number, another label, the end of a sentence). Linear in the text.
 */
export function labelledNames(text: string): string[] {
  const folded = foldTerm(text);
  const out: string[] = [];
  for (const m of folded.matchAll(NAME_LABEL)) {
    // "Name:" alone is a field label only where a field starts ("Test name: Hemoglobin" is not the patient's).
    if (!/^patient|^pacient|^pasient/i.test(m[0]) && /\p{L}\s*$/u.test(folded.slice(Math.max(0, m.index - 3), m.index))) continue;
    const rest = folded.slice(m.index + m[0].length, m.index + m[0].length + 200);
    const tokens = rest.split(/\s+/);
    const span: string[] = [];
    let taken = 0;
    for (let i = 0; i < tokens.length && taken < MAX_LABELLED_TOKENS; i++) {
      const raw = tokens[i]!;
      if (!raw || raw.endsWith(":")) break;
      const word = raw.replace(/[.,;]+$/, "");
      const lower = word.toLowerCase();
      if (TITLES.has(lower) || (PARTICLES.has(lower) && i + 1 < tokens.length && /^\p{Lu}/u.test(tokens[i + 1]!))) {
        taken++;
        continue;
      }
      if (!/^\p{Lu}[\p{L}'-]*$/u.test(word) || NOT_A_NAME.has(lower)) break;
      span.push(...splitNameParts(word));
      taken++;
      // A token that ends a sentence ("Méldërs.") ends the name; an initial ("H.") does not.
      if (/[.;]$/.test(raw) && word.length > 1) break;
      // "Doe, William": a family name, a comma, then the given names; any other comma ends the name.
      if (raw.endsWith(",") && !(span.length === splitNameParts(word).length && /^\p{Lu}[\p{L}'-]*[.,;]?$/u.test(tokens[i + 1] ?? "") && !NOT_A_NAME.has((tokens[i + 1] ?? "").replace(/[.,;]+$/, "").toLowerCase()))) break;
    }
    if (!span.some((w) => NOT_A_PERSON.has(w.toLowerCase()))) out.push(...span);
  }
  return scrubbableNameParts(out).filter((p) => !NOT_A_NAME.has(p.toLowerCase()));
}

function birthDatePatterns(birthDate: string): string[] {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(birthDate);
  if (!m) return /^\d{4}-\d{2}$/.test(birthDate) ? [escape(birthDate)] : [];
  const [, y, mo, d] = m as unknown as [string, string, string, string];
  const mi = Number(mo);
  const di = Number(d);
  const month = MONTHS[mi - 1]!;
  const monthRe = `(?:${month}|${month.slice(0, 3)}\\.?${month === "september" ? "|sept\\.?" : ""})`;
  const mm = `0?${mi}`;
  const dd = `0?${di}`;
  const yy = y.slice(2);
  const year = `(?:${y}|'?${yy})`;
  const ord = "(?:st|nd|rd|th)?";
  return [
    `${y}-${mo}-${d}(?:T[0-9:.+Z-]*)?`,
    `${y}[/.\\s-]${mm}[/.\\s-]${dd}`,
    `${mm}[/.-]${dd}[/.-]${year}`,
    `${dd}[/.-]${mm}[/.-]${year}`,
    `${y}${mo}${d}`,
    `${dd}${mo}${y}`,
    `${monthRe}[\\s.-]*${dd}${ord},?\\s*${year}`,
    `${dd}${ord}[\\s.-]*(?:of\\s+)?${monthRe},?[\\s.-]*${year}`,
    // Dotted with spaces ("3. 2. 1951") and a Roman-numeral month ("3.II.1951", "3 II 51", "1951.II.3").
    `${dd}\\.\\s*${mm}\\.\\s*${year}`,
    `${dd}[\\s./-]*${ROMAN_MONTHS[mi - 1]}[\\s./-]*${year}`,
    `${y}[\\s./-]*${ROMAN_MONTHS[mi - 1]}[\\s./-]*${dd}`,
  ];
}

/** Street words and the abbreviations people write for them. */
const STREET_WORDS: Array<[RegExp, string]> = [
  [/^(street|st)$/, "(?:street|st|str)\\.?"],
  [/^(road|rd)$/, "(?:road|rd)\\.?"],
  [/^(avenue|ave|av)$/, "(?:avenue|ave|av)\\.?"],
  [/^(boulevard|blvd)$/, "(?:boulevard|blvd)\\.?"],
  [/^(drive|dr)$/, "(?:drive|dr)\\.?"],
  [/^(lane|ln)$/, "(?:lane|ln)\\.?"],
  [/^(court|ct)$/, "(?:court|ct)\\.?"],
  [/^(place|pl)$/, "(?:place|pl)\\.?"],
  [/^(square|sq)$/, "(?:square|sq)\\.?"],
  [/^(terrace|terr|ter)$/, "(?:terrace|terr?)\\.?"],
  [/^(highway|hwy)$/, "(?:highway|hwy)\\.?"],
  [/^(apartment|apt)$/, "(?:apartment|apt)\\.?"],
  [/^(north|n)$/, "(?:north|n)\\.?"],
  [/^(south|s)$/, "(?:south|s)\\.?"],
  [/^(east|e)$/, "(?:east|e)\\.?"],
  [/^(west|w)$/, "(?:west|w)\\.?"],
];

/** An address line as written or abbreviated ("12 Kingsley Road" → also "12 Kingsley Rd."), and a Dutch or German "…straat"/"…straße" as "…str.". */
function addressLinePatterns(line: string): string[] {
  const words = foldTerm(line).trim().split(/\s+/).filter(Boolean);
  if (!words.length) return [];
  const parts = words.map((w) => {
    const plain = w.toLowerCase().replace(/[.,]+$/, "");
    const street = STREET_WORDS.find(([re]) => re.test(plain));
    if (street) return street[1];
    const compound = /^(.+?)(straat|strasse|straße|str)$/.exec(plain);
    if (compound && compound[1]!.length >= 3) return `${loose(compound[1]!)}(?:straat|strasse|stra(?:ss|ß)e|str\\.?)`;
    return loose(w.replace(/[,]+$/, ""));
  });
  const out = [parts.join("[\\s,]+")];
  // The street without its house number or flat ("Kingsley Road" of "12 Kingsley Road, Flat 3"): a name and a street word at least.
  const numbered = (w: string) => /\d/.test(w);
  let from = 0;
  let to = words.length;
  while (from < to && numbered(words[from]!)) from++;
  while (to > from && numbered(words[to - 1]!)) to--;
  const named = words.slice(from, to).filter((w) => /\p{L}{3,}/u.test(w));
  const hasStreetWord = parts.slice(from, to).some((p, i) => p.startsWith("(?:") || /(straat|strasse|str)$/i.test(words[from + i]!));
  if ((from > 0 || to < words.length) && named.length >= 1 && to - from >= 2 && hasStreetWord) out.push(parts.slice(from, to).join("[\\s,]+"));
  return out;
}

/** A postal code however it is spaced or cased ("SW1A 1AA", "sw1a1aa", "1234 AB", "1234AB"). */
function postcodePattern(code: string): string | null {
  const compact = foldTerm(code).replace(/[\s-]/g, "");
  if (compact.length < 3) return null;
  return compact.split("").map(escape).join("[\\s-]?");
}

/** One pass: every pattern of a kind, longest first, bounded by non-alphanumerics. */
function pass(patterns: string[], replacement: string | ((m: string) => string), caseSensitive = false): ((s: string) => string) | null {
  const uniq = [...new Set(patterns)].sort((a, b) => b.length - a.length).slice(0, MAX_TERMS);
  if (!uniq.length) return null;
  const re = new RegExp(`(?<![\\p{L}\\p{N}])(?:${uniq.join("|")})(?![\\p{L}\\p{N}])`, caseSensitive ? "gu" : "giu");
  return (s) => s.replace(re, replacement as string);
}

/** A secret for the pseudonyms of a program that configured none: random, this process only. */
let processSecret: Buffer | null = null;
function defaultSecret(): Buffer {
  processSecret ??= randomBytes(32);
  return processSecret;
}

/**
 * A stable opaque name for a patient id, keyed with a secret (HMAC-SHA256): the same id and
 * secret give the same pseudonym in every case, and without the secret nobody can tell which
 * id a pseudonym stands for by hashing candidate ids.
 */
export function patientPseudonym(id: string, secret: Buffer | string = defaultSecret()): string {
  return `pt-${createHmac("sha256", secret).update(`medmmv-patient:${id}`).digest("hex").slice(0, 16)}`;
}

/**
 * The scrubber for a bundle, from its Patient (names, contacts, address, telecom,
 * identifiers, birth date), the RelatedPersons it holds, and the names its narratives label
 * as the patient's (`learnedNames`).
 */
export function scrubberFor(patients: Json[], related: Json[], opts: ScrubberOptions = {}): Scrubber {
  const names: string[] = [];
  const addresses: string[] = [];
  const telecom: string[] = [];
  const identifiers: string[] = [];
  const births: string[] = [];
  const people: Json[] = [...patients, ...related];
  for (const p of patients) for (const c of Array.isArray(p.contact) ? p.contact : []) if (c && typeof c === "object") people.push(c as Json);
  const nameParts: string[] = [];
  for (const person of people) {
    nameParts.push(...scrubbableNameParts(humanNameParts(person.name)));
    const addrs = Array.isArray(person.address) ? person.address : person.address ? [person.address] : [];
    for (const a of addrs) {
      if (!a || typeof a !== "object") continue;
      const ad = a as Json;
      for (const v of [...strings(ad.line), ...strings(ad.text)]) if (v.trim().length >= 3) addresses.push(...addressLinePatterns(v));
      for (const v of [...strings(ad.city), ...strings(ad.district)]) if (v.trim().length >= 3) addresses.push(loose(v));
      for (const v of strings(ad.postalCode)) {
        const p = postcodePattern(v);
        if (p) addresses.push(p);
      }
    }
    telecom.push(...valuePatterns(person.telecom, false));
    for (const t of Array.isArray(person.telecom) ? person.telecom : []) {
      const v = t && typeof t === "object" ? (t as Json).value : undefined;
      if (typeof v === "string" && (t as Json).system !== "email" && (t as Json).system !== "url") telecom.push(...phonePatterns(v));
    }
    identifiers.push(...valuePatterns(person.identifier, true));
    if (typeof person.birthDate === "string") births.push(...birthDatePatterns(person.birthDate));
  }
  const statedParts = scrubbableNameParts((opts.statedNames ?? []).flatMap(splitNameParts));
  for (const part of [...nameParts, ...statedParts]) names.push(`${loose(part, true)}\\d*`);
  // A name only a narrative label gives may also be a word ("Test", "See"): matched as a name is
  // written (capitalised, or in capitals), not in every case as the names the record states are.
  const learned: string[] = [];
  for (const part of opts.learnedNames ?? []) {
    const capital = part.charAt(0).toUpperCase() + part.slice(1);
    learned.push(loose(capital, true), loose(part.toUpperCase(), true));
  }

  // Resource ids: the Patient's always, and any other that holds a name part or an identifier, become opaque.
  const { pseudonyms, byName, idSwap } = opaqueIds([...patients, ...(opts.patientIds ?? []).map((id) => ({ id }))], opts.resourceNames ?? [], [...nameParts, ...statedParts, ...(opts.learnedNames ?? [])], identifierValues(people), opts.secret);
  const ids = idSwap.size ? pass([...idSwap.keys()].map(escape), (m) => idSwap.get(m) ?? idSwap.get(m.toLowerCase()) ?? "[identifier]", true) : null;
  const passes = [
    ids,
    pass(identifiers, "[identifier]"),
    pass(telecom, "[contact]"),
    pass(births, "[birth date]"),
    pass(addresses, "[address]"),
    pass(names, "[name]"),
    pass(learned, "[name]", true),
  ].filter((f): f is (s: string) => string => f !== null);

  return {
    // Matched on the normalised text; what is left is put back in composed form (accents kept), a name's title and initials with it.
    text: (s) => (passes.length ? collapseNames(passes.reduce((acc, f) => f(acc), normaliseForMatching(s))).normalize("NFC") : s),
    name: (n) => byName.get(n) ?? n,
    pseudonyms,
  };
}

/** The identifier values a record states for its people, for the ids that spell one. */
function identifierValues(people: Json[]): Set<string> {
  const out = new Set<string>();
  for (const p of people) {
    for (const list of [p.identifier, p.telecom]) {
      for (const i of Array.isArray(list) ? list : []) {
        const v = i && typeof i === "object" ? (i as Json).value : undefined;
        if (typeof v !== "string") continue;
        const alnum = foldTerm(v).toLowerCase().replace(/[^\p{L}\p{N}]/gu, "");
        if (alnum.length >= 4) out.add(alnum);
        const digits = v.replace(/\D/g, "");
        if (digits.length >= 5) out.add(digits);
      }
    }
  }
  return out;
}

/** An opaque id for a resource id, keyed with the secret like the patient pseudonym. */
function opaqueId(id: string, secret: Buffer | string | undefined): string {
  return `id-${createHmac("sha256", secret ?? defaultSecret()).update(`medmmv-resource:${id}`).digest("hex").slice(0, 16)}`;
}

/**
 * Which resource ids are replaced and by what. The Patient's id always (its pseudonym: an
 * id is how a record is found again); any other id that holds a name part of the patient
 * (`UKCore-Patient-RichardSmith-Example`, compared without case or separators) or an
 * identifier's value or digits. `pseudonyms` maps each opaque name back to the EHR's, for the
 * export; `byName` is the same the other way; `idSwap` replaces the raw ids in free text —
 * the Patient's only where it is long enough to be told from a word or a number in a note.
 */
function opaqueIds(patients: Json[], resourceNames: readonly string[], nameParts: readonly string[], identifierValues: Set<string>, secret: Buffer | string | undefined): { pseudonyms: Record<string, string>; byName: Map<string, string>; idSwap: Map<string, string> } {
  const pseudonyms: Record<string, string> = {};
  const byName = new Map<string, string>();
  const idSwap = new Map<string, string>();
  const parts = [...new Set(nameParts.map((p) => foldTerm(p).toLowerCase().replace(/[^\p{L}]/gu, "")).filter((p) => p.length >= 3))];
  // An id that holds the patient's id (Oracle names a FamilyMemberHistory `<patient id>-<n>`) spells an identifier too.
  // Written in free text only where it can be told from a word or a number in a note ("example" cannot).
  const searchable = (id: string) => (id.length >= 4 && /\d/.test(id)) || id.length >= 8;
  for (const p of patients) if (typeof p.id === "string" && searchable(p.id)) identifierValues.add(foldTerm(p.id).toLowerCase().replace(/[^\p{L}\p{N}]/gu, ""));
  const spells = (id: string) => {
    const flat = foldTerm(id).toLowerCase().replace(/[^\p{L}\p{N}]/gu, "");
    return parts.some((p) => flat.includes(p)) || [...identifierValues].some((v) => flat.includes(v));
  };
  const swap = (type: string, id: string, pseudo: string, inText: boolean) => {
    byName.set(`${type}/${id}`, `${type}/${pseudo}`);
    pseudonyms[`${type}/${pseudo}`] = `${type}/${id}`;
    if (inText) idSwap.set(id, pseudo);
  };
  for (const p of patients) {
    const id = typeof p.id === "string" ? p.id : undefined;
    if (id && !byName.has(`Patient/${id}`)) swap("Patient", id, patientPseudonym(id, secret), searchable(id));
  }
  for (const name of resourceNames.slice(0, 100_000)) {
    const slash = name.indexOf("/");
    const type = name.slice(0, slash);
    const id = name.slice(slash + 1);
    if (slash < 0 || byName.has(name) || !spells(id)) continue;
    swap(type, id, type === "Patient" ? patientPseudonym(id, secret) : opaqueId(id, secret), searchable(id));
  }
  return { pseudonyms, byName, idSwap };
}

/** A name's title, initials and the parts between them go with it: "Ms. [name]", "W. [name]", "[name], [name]" are one "[name]". */
const NAME_TITLES = "mr mrs ms miss mx dr prof sir madam herr frau mme mlle".split(" ").flatMap((t) => [t, t.charAt(0).toUpperCase() + t.slice(1), t.toUpperCase()]);
const NAME_RUN = new RegExp(`(?:(?<![\\p{L}\\p{N}])(?:${NAME_TITLES.join("|")})\\.?\\s+)?(?:(?<![\\p{L}\\p{N}])\\p{Lu}\\.?\\s+)*\\[name\\](?:(?:\\s*,\\s*|\\s+|-)(?:\\p{Lu}\\.?\\s+)*\\[name\\])*`, "gu");

function collapseNames(s: string): string {
  return s.includes("[name]") ? s.replace(NAME_RUN, "[name]") : s;
}
