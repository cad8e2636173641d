// Uses app.inject: DICOM written without the Part 10 preamble (its file meta group first, or its
// dataset from the first byte, as older writers did; DCMTK and GDCM read both) is read on every
// intake path by the one detection (recogniseImage): base64 in the case JSON, a multipart file,
// and a FHIR attachment — Media content, a Binary through Media's url, DocumentReference
// content, a Binary on its own. Before, a FHIR attachment needed "DICM" (415 "is not an image").
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DiagnosisResult } from "../../../src/core/contracts/diagnosis-result.js";
import { syntheticCt } from "../../core/intake/dicom/dicom-fixtures.js";
import { chestPain, json } from "./http-harness.js";
import { startInjectServer, type InjectServer } from "./inject-harness.js";

let t: InjectServer;
beforeAll(async () => {
  t = await startInjectServer();
});
afterAll(() => t.close());

/** The synthetic CT with its 128-byte preamble and "DICM" cut off: its file meta group comes first. */
const metaFirst = syntheticCt().file.subarray(132);
/** pydicom-data's OT-PAL-8-face: a palette image whose dataset starts at the first byte, no file meta at all (fixtures README). */
const datasetOnly = readFileSync(path.join(import.meta.dirname, "../../fixtures/dicom-scanners/OT-PAL-8-face.dcm"));
const OBJECTS = [
  { name: "file meta first", bytes: metaFirst, modality: "CT", sopInstanceUid: "2.25.1001" },
  { name: "dataset only", bytes: datasetOnly, modality: "OT", sopInstanceUid: undefined },
] as const;

type Stored = { id: string; mimeType: string; dicom?: { sopInstanceUid: string; modality?: string } };
async function storedImages(res: Response): Promise<Stored[]> {
  expect(res.status, await res.clone().text()).toBe(201);
  const caseId = DiagnosisResult.parse(await res.json()).caseId;
  return (await json<{ case: { images: Stored[] } }>(await t.api(`/cases/${caseId}`))).case.images;
}

function expectRendered(images: Stored[], o: (typeof OBJECTS)[number]): void {
  expect(images).toHaveLength(1);
  expect(images[0]!.mimeType).toBe("image/png");
  expect(images[0]!.dicom?.modality).toBe(o.modality);
  if (o.sopInstanceUid) expect(images[0]!.dicom?.sopInstanceUid).toBe(o.sopInstanceUid);
}

const fhir = (entries: object[]) =>
  t.api("/diagnose", {
    method: "POST",
    headers: { "content-type": "application/fhir+json" },
    body: JSON.stringify({ resourceType: "Bundle", type: "collection", entry: [{ resource: { resourceType: "Patient", id: "p1", gender: "male" } }, ...entries.map((resource) => ({ fullUrl: `urn:uuid:${(resource as { id: string }).id}`, resource }))] }),
  });

describe.each(OBJECTS)("DICOM without the preamble ($name)", (o) => {
  const data = o.bytes.toString("base64");

  it("as base64 in the case JSON", async () => {
    expectRendered(await storedImages(await t.api("/diagnose", { method: "POST", json: chestPain({ images: [{ id: "scan", data }] }) })), o);
  });

  it("as a multipart file", async () => {
    const form = new FormData();
    form.set("case", JSON.stringify(chestPain({ images: [{ id: "scan" } as never] })));
    form.set("scan", new Blob([new Uint8Array(o.bytes)], { type: "application/dicom" }), "scan.dcm");
    expectRendered(await storedImages(await t.api("/diagnose", { method: "POST", body: form })), o);
  });

  it("as a FHIR Media's content", async () => {
    expectRendered(await storedImages(await fhir([{ resourceType: "Media", id: "m1", status: "completed", subject: { reference: "Patient/p1" }, content: { contentType: "application/dicom", data } }])), o);
  });

  it("as a FHIR Binary that a Media's content points at", async () => {
    const res = await fhir([
      { resourceType: "Media", id: "m2", status: "completed", subject: { reference: "Patient/p1" }, content: { contentType: "application/dicom", url: "urn:uuid:b2" } },
      { resourceType: "Binary", id: "b2", contentType: "application/dicom", data },
    ]);
    expectRendered(await storedImages(res), o);
  });

  it("as a FHIR DocumentReference's content", async () => {
    expectRendered(await storedImages(await fhir([{ resourceType: "DocumentReference", id: "d1", status: "current", subject: { reference: "Patient/p1" }, content: [{ attachment: { contentType: "application/dicom", data } }] }])), o);
  });

  it("as a FHIR Binary on its own", async () => {
    expectRendered(await storedImages(await fhir([{ resourceType: "Binary", id: "b3", contentType: "application/dicom", data }])), o);
  });
});

describe("bytes that are neither an image nor DICOM", () => {
  it("are still refused as a FHIR attachment, naming the element", async () => {
    const junk = Buffer.alloc(64, 0xab);
    junk.writeUInt16LE(0x0008, 0);
    const res = await fhir([{ resourceType: "Media", id: "m9", status: "completed", subject: { reference: "Patient/p1" }, content: { contentType: "application/dicom", data: junk.toString("base64") } }]);
    expect(res.status).toBe(415);
    const oo = await json<{ resourceType: string; issue: Array<{ expression?: string[]; diagnostics?: string }> }>(res);
    expect(oo.issue[0]).toMatchObject({ expression: ["Bundle.entry[1].resource.content.data"], diagnostics: expect.stringMatching(/is not an image/) });
  });
});
