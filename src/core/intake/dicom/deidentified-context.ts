import { BASIC_PROFILE_TEXT_ATTRIBUTES } from "./basic-profile-attributes.js";

/**
 * The only words of a DICOM object's header that reach an agent: modality, body part, the
 * study description with every name and number taken out, the patient's age and sex. This
 * is an allow-list — nothing else of the header (names, ids, dates, UIDs, institutions,
 * physicians, addresses: the PS3.15 basic-profile attributes) is ever read into the case.
 */

/**
 * Attributes whose words are removed from the caption's free text: every text attribute of the
 * PS3.15 Basic Application Level Confidentiality Profile (basic-profile-attributes.ts, from the
 * standard's Table E.1-1) — names, addresses, locations, institutions, stations, ids, and the
 * descriptions that may hold any of them — but the study description, which is the caption.
 */
const IDENTIFYING: readonly string[] = BASIC_PROFILE_TEXT_ATTRIBUTES.map(([keyword]) => keyword).filter((k) => k !== "StudyDescription");
/** Descriptions (the Clean Descriptors Option's attributes): their short words and defined body parts stay in the caption. */
const DESCRIPTORS = new Set(BASIC_PROFILE_TEXT_ATTRIBUTES.filter(([, , , , d]) => d === "C").map(([keyword]) => keyword));

/** Every attribute deidentifiedContext reads (the decoder sends back these, and no others). */
export const CONTEXT_ATTRIBUTES: readonly string[] = ["Modality", "BodyPartExamined", "StudyDescription", "PatientAge", "PatientSex", ...IDENTIFYING];

const CODE_STRING = /^[A-Z0-9 _]{1,16}$/;

/**
 * BodyPartExamined's defined terms (PS3.16 Annex L, the common ones): the attribute is free to
 * write, and writers have put names in it, so only a defined term is read.
 */
const BODY_PARTS = new Set([
  "ABDOMEN", "ABDOMENPELVIS", "ADRENAL", "ANKLE", "AORTA", "ARM", "AXILLA", "BACK", "BLADDER", "BRAIN", "BREAST", "BRONCHUS",
  "BUTTOCK", "CALCANEUS", "CALF", "CAROTID", "CEREBELLUM", "CSPINE", "CERVIX", "CHEEK", "CHEST", "CHESTABDOMEN", "CHESTABDPELVIS",
  "CIRCLEOFWILLIS", "CLAVICLE", "COCCYX", "COLON", "CORNEA", "CORONARYARTERY", "DUODENUM", "EAR", "ELBOW", "WHOLEBODY", "ESOPHAGUS",
  "EXTREMITY", "EYE", "EYELID", "FACE", "FEMUR", "FINGER", "FOOT", "GALLBLADDER", "HAND", "HEAD", "HEADNECK", "HEART", "HIP",
  "HUMERUS", "IAC", "ILEUM", "ILIUM", "JAW", "JEJUNUM", "KIDNEY", "KNEE", "LARYNX", "LEG", "LIVER", "LSPINE", "LSSPINE", "LUNG",
  "MAXILLA", "MEDIASTINUM", "MOUTH", "NECK", "NECKCHEST", "NECKCHESTABDOMEN", "NECKCHESTABDPELV", "NOSE", "ORBIT", "OVARY",
  "PANCREAS", "PAROTID", "PATELLA", "PELVIS", "PENIS", "PHARYNX", "PROSTATE", "RECTUM", "RIB", "SSPINE", "SCALP", "SCAPULA",
  "SCLERA", "SCROTUM", "SHOULDER", "SKULL", "SPINE", "SPLEEN", "STERNUM", "STOMACH", "SUBMANDIBULAR", "TMJ", "TESTIS", "THIGH",
  "TSPINE", "TLSPINE", "THUMB", "THYMUS", "THYROID", "TOE", "TONGUE", "TRACHEA", "ARM", "UTERUS", "VAGINA", "WRIST", "ZYGOMA",
  "SINUS", "PELVISLOWEXTREMT", "LOWEREXTREMITY", "UPPEREXTREMITY", "RETROPERITONEUM", "ENDOMETRIUM", "PLACENTA", "UMBILICUS",
]);

/** A value's text: a string, or every component group (alphabetic, ideographic, phonetic) of a person name. */
function texts(v: unknown): string[] {
  const values = Array.isArray(v) ? v : [v];
  const out: string[] = [];
  for (const x of values) {
    if (typeof x === "string") out.push(...x.split("="));
    else if (x && typeof x === "object") for (const k of ["Alphabetic", "Ideographic", "Phonetic"]) if (typeof (x as Record<string, unknown>)[k] === "string") out.push((x as Record<string, string>)[k]!);
  }
  return out;
}

/** The first value of a plain attribute (Modality, StudyDescription…): never split on "=", which separates a person name's groups only. */
function text(v: unknown): string | undefined {
  const first = Array.isArray(v) ? v[0] : v;
  return typeof first === "string" ? first : texts(first)[0];
}

/** Letters of scripts written without spaces between words (a name is found inside a run of them). */
const UNSPACED = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\p{Script=Thai}]/u;

/**
 * Every name part (≥ 2 characters) of every identifying value, lower-cased: the parts between
 * separators (`^`, spaces, hyphens, apostrophes) and each hyphenated or apostrophised name
 * whole and joined (`smith-quayle`, `smithquayle`). (The FHIR scrubber, fhir/deidentify.ts, splits on its
 * own rules: apostrophised names whole, and it folds diacritics; the two are not shared.)
 */
function identifyingWords(elements: Record<string, unknown>): { words: Set<string>; unspaced: string[] } {
  const words = new Set<string>();
  const unspaced: string[] = [];
  for (const name of IDENTIFYING) {
    const descriptor = DESCRIPTORS.has(name);
    for (const s of texts(elements[name])) {
      for (const chunk of s.toLowerCase().split(/[\s^,=]+/u)) {
        const joined = chunk.replace(/[^\p{L}\p{N}]+/gu, "");
        // A description's short words ("for", "CT", "w/") and defined body parts are the acquisition's, not a person's.
        const clinical = (w: string) => descriptor && (w.length <= 3 || BODY_PARTS.has(w.toUpperCase()));
        if (joined.length >= 2 && !clinical(joined)) words.add(joined);
        for (const part of chunk.split(/[^\p{L}\p{N}]+/u)) {
          if (part.length >= 2 && !clinical(part)) words.add(part);
          if (part.length >= 2 && UNSPACED.test(part)) unspaced.push(part);
        }
      }
    }
  }
  return { words, unspaced };
}

/**
 * Free text with identifying words, every token holding a digit (ids, dates such as 03/02/51,
 * split identifiers such as `MRN 77 81`, phone numbers) and name-like `^` forms removed.
 */
export function stripIdentifiers(s: string, elements: Record<string, unknown>): string {
  const { words, unspaced } = identifyingWords(elements);
  let t = s.replace(/\S*\^\S*/g, " "); // DICOM person-name syntax, wherever it appears
  // A name in a script without spaces is found inside its run of letters, not as a token.
  for (const name of unspaced.sort((a, b) => b.length - a.length)) t = t.split(name).join(" ");
  return t
    .split(/(\s+)/)
    .map((tok) => {
      if (/\p{N}/u.test(tok)) return "";
      const lower = tok.toLowerCase();
      const joined = lower.replace(/[^\p{L}\p{N}]+/gu, "");
      if (joined && words.has(joined)) return "";
      if (lower.split(/[^\p{L}\p{N}]+/u).some((part) => part.length >= 2 && words.has(part))) return "";
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
  const bodyPart = text(elements.BodyPartExamined)?.trim().toUpperCase();
  if (bodyPart && BODY_PARTS.has(bodyPart)) parts.push(`body part ${bodyPart.toLowerCase()}`);
  const study = text(elements.StudyDescription);
  const cleaned = study ? stripIdentifiers(study, elements) : "";
  if (cleaned) parts.push(`study: ${cleaned}`);
  const age = /^(\d{3})([DWMY])$/.exec(text(elements.PatientAge) ?? "");
  if (age) parts.push(`${Number(age[1])} ${{ D: "days", W: "weeks", M: "months", Y: "y" }[age[2] as "D"]}`);
  const sex = text(elements.PatientSex);
  if (sex === "M" || sex === "F" || sex === "O") parts.push(`sex ${sex}`);
  return parts.join(" · ");
}
