import { describe, expect, it } from "vitest";
import { prepareImages } from "../../../../src/core/intake/images.js";
import { deidentifiedContext } from "../../../../src/core/intake/dicom/deidentified-context.js";
import { ct64 } from "./hostile-dicom.js";

const OPTS = { maxBytes: 10 * 1024 * 1024, maxPixels: 40_000_000, allowPath: false } as const;

/** Header canaries that reached a prompt before: hyphenated, apostrophised and ideographic names, a name as body part, short dates, split ids. */
const HEADER = {
  SpecificCharacterSet: "ISO_IR 192",
  PatientName: "Smith-Quayle^Orla=山田^太郎=やまだ^たろう",
  OtherPatientNames: "O'Quarrel^Beatrix",
  PatientID: "MRN7781",
  BodyPartExamined: "SMITHQUAYLE",
  StudyDescription: "CT chest for Smith-Quayle, O’Quarrel's follow-up 03/02/51 MRN 77 81 山田太郎の検査 Quayle",
};
const CANARIES = ["smith", "quayle", "quarrel", "orla", "beatrix", "03/02/51", "77", "81", "山田", "太郎", "やまだ", "たろう"];

describe("de-identified DICOM context", () => {
  it("keeps none of the header canaries, from the parsed object through to the caption", async () => {
    const [img] = await prepareImages({ id: "ct", data: ct64(HEADER).toString("base64") }, OPTS);
    const caption = img!.caption!.toLowerCase();
    expect(caption).toContain("study: ct chest for");
    for (const c of CANARIES) expect(caption, c).not.toContain(c);
    expect(caption).not.toContain("body part");
  });

  it("reads BodyPartExamined only from its defined terms, and the ideographic and phonetic name groups", () => {
    expect(deidentifiedContext({ Modality: "CT", BodyPartExamined: "CHEST" })).toBe("CT · body part chest");
    expect(deidentifiedContext({ Modality: "CT", BodyPartExamined: "QUAYLE" })).toBe("CT");
    // "=" separates a person name's groups only: a description that holds one is kept whole.
    expect(deidentifiedContext({ Modality: "CT", StudyDescription: "CT abdomen contrast=yes" })).toBe("CT · study: CT abdomen contrast=yes");
    const pn = { PatientName: [{ Alphabetic: "Yamada^Taro", Ideographic: "山田^太郎", Phonetic: "やまだ^たろう" }], StudyDescription: "頭部CT 山田 やまだ様 Yamada" };
    expect(deidentifiedContext(pn)).toBe("study: 頭部CT 様");
  });

  it("scrubs the words of every text attribute of the PS3.15 basic profile from the caption, the twelve an adversarial review found among them", async () => {
    // Issue 53: values of these reached the prompt through StudyDescription.
    const planted = {
      ReferringPhysicianAddress: "Quillfeather Lane",
      ConsultingPhysicianName: "Marchbanks^Ottoline",
      PerformedLocation: "Brackenridge",
      RegionOfResidence: "Thistlewood",
      ProtocolName: "Pemberton CHEST protocol",
      CountryOfResidence: "Wrenfold",
      PersonAddress: "Ashcombe Terrace",
      HumanPerformerName: "Vasquez^Imelda",
      ResponsibleOrganization: "Gildersleeve Trust",
      CurrentPatientLocation: "Larkspur Ward",
      ScheduledProcedureStepLocation: "Hollowmere",
      OrderEntererLocation: "Fenwick",
    };
    const words = ["quillfeather", "marchbanks", "ottoline", "brackenridge", "thistlewood", "pemberton", "wrenfold", "ashcombe", "vasquez", "imelda", "gildersleeve", "larkspur", "hollowmere", "fenwick"];
    const StudyDescription = `CT chest ${Object.values(planted).map((v) => v.replace("^", " ")).join(" ")}`;
    const [img] = await prepareImages({ id: "ct", data: ct64({ ...planted, StudyDescription }).toString("base64") }, OPTS);
    const caption = img!.caption!.toLowerCase();
    expect(caption).toContain("study: ct chest");
    for (const w of words) expect(caption, w).not.toContain(w);
  });

  it("takes the attribute list from the standard's table: every person-name attribute of it, not a hand list", async () => {
    const { BASIC_PROFILE_TEXT_ATTRIBUTES } = await import("../../../../src/core/intake/dicom/basic-profile-attributes.js");
    const keywords = BASIC_PROFILE_TEXT_ATTRIBUTES.map(([k]) => k);
    expect(keywords.length).toBeGreaterThan(250);
    for (const k of ["ConsultingPhysicianName", "ReferringPhysicianAddress", "PerformedLocation", "RegionOfResidence", "ProtocolName", "PatientName", "InstitutionName"]) expect(keywords).toContain(k);
    expect(BASIC_PROFILE_TEXT_ATTRIBUTES.filter(([, , vr]) => vr === "PN").length).toBeGreaterThanOrEqual(29);
  });
});
