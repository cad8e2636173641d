/**
 * SYNTHETIC: a Patient that states its identifiers once, and notes that write each of them
 * the ways people do — the eighteen written variants an adversarial review found reaching the
 * prompt. Each variant sits in its own Observation note, so a test can name the one that leaks.
 */
import type { Json } from "./real-material.js";

export const STATED = {
  given: "Zoë",
  family: "O'Vantree",
  birthDate: "1951-02-03",
  phone: "0171 555 0199",
  mrn: "MRN-440566",
  line: "12 Kingsley Road",
  city: "Eastbourne",
  postalCode: "BN21 4TH",
} as const;

/** [what it is, how the note writes it] */
export const WRITTEN_VARIANTS: ReadonlyArray<readonly [string, string]> = [
  ["a curly apostrophe", "O\u2019Vantree"],
  ["the name without its apostrophe", "OVantree"],
  ["upper case with a curly apostrophe", "O\u2019VANTREE"],
  ["Zoe for Zoë", "Zoe"],
  ["Zoë decomposed (e + combining diaeresis)", "Zoe\u0308"],
  ["a zero-width space inside the name", "O'Van\u200Btree"],
  ["a soft hyphen inside the name", "Zo\u00ADë"],
  ["full-width letters", "\uFF2F'\uFF36\uFF41\uFF4E\uFF54\uFF52\uFF45\uFF45"],
  ["d-Mon-yyyy", "03-Feb-1951"],
  ["y/m/d", "1951/02/03"],
  ["Feb 3rd '51", "Feb 3rd '51"],
  ["d/m/yy, a two-digit year", "3/2/51"],
  ["a month written out with an ordinal", "February 3rd, 1951"],
  ["a phone with slashes", "0171/555/0199"],
  ["the digit core of the MRN", "440566"],
  ["the digit core split by a space", "4405 66"],
  ["an abbreviated street", "12 Kingsley Rd."],
  ["the postcode unspaced, lower case", "bn214th"],
  // Issue 53: forms that still passed.
  ["the phone in E.164", "+441715550199"],
  ["the phone with the international prefix", "0044 171 555 0199"],
  ["the street name alone", "Kingsley Road"],
  ["the name hyphenated over a line break", "O'Van-\ntree"],
  ["a Roman-numeral month, dotted", "3.II.1951"],
  ["a dotted date with spaces", "3. 2. 1951"],
  ["FAMILY, GIVEN", "O'Vantree, Zoë"],
  ["a title and the family name", "Ms. O'Vantree"],
  ["an initial and the family name", "Z. O'Vantree"],
  ["GIVEN FAMILY in capitals", "ZOE O'VANTREE"],
  ["the Patient's id", "pt-variants"],
];

/** Folded forms of what was stated: none may be left in notes, prompts, results or logs. */
export const FORBIDDEN = ["pt-variants", "vantree", "zoe", "1951", "'51", "0171", "0199", "440566", "4405", "kingsley", "bn21", "bn214th", "eastbourne"];

export function variantsBundle(): Json {
  const note = (i: number, text: string) => ({
    resource: {
      resourceType: "Observation",
      id: `note-${i}`,
      status: "final",
      code: { text: `Clinic note ${i + 1}` },
      subject: { reference: "Patient/pt-variants" },
      effectiveDateTime: "2026-11-30",
      valueString: "reviewed",
      note: [{ text }],
    },
  });
  return {
    resourceType: "Bundle",
    type: "collection",
    timestamp: "2026-12-01T09:00:00Z",
    entry: [
      {
        resource: {
          resourceType: "Patient",
          id: "pt-variants",
          meta: { tag: [{ system: "urn:medmmv:test", code: "synthetic" }] },
          name: [{ given: [STATED.given], family: STATED.family }],
          gender: "female",
          birthDate: STATED.birthDate,
          telecom: [{ system: "phone", value: STATED.phone }],
          identifier: [{ type: { text: "MRN" }, value: STATED.mrn }],
          address: [{ line: [STATED.line], city: STATED.city, postalCode: STATED.postalCode }],
        },
      },
      { resource: { resourceType: "Condition", id: "c1", clinicalStatus: { coding: [{ code: "active" }] }, code: { text: "Community-acquired pneumonia" }, subject: { reference: "Patient/pt-variants" }, onsetDateTime: "2026-11-28" } },
      ...WRITTEN_VARIANTS.map(([, written], i) => note(i, `Seen in clinic; the record reads ${written} here. Cough for three days.`)),
    ],
  } as Json;
}

/** Text as the checks read it: composed, without format characters, diacritics and case. */
export function folded(s: string): string {
  return s.normalize("NFKC").replace(/\p{Cf}/gu, "").replace(/[\u2018\u2019]/g, "'").normalize("NFD").replace(/\p{M}/gu, "").toLowerCase();
}
