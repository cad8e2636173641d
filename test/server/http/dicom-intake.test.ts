// Uses app.inject: DICOM Part 10 as a multipart file, as base64 in the case JSON and in a FHIR bundle; bad objects stay 4xx.
import type { OperationOutcome } from "fhir/r4.js";
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

const ct = syntheticCt().file;

async function storedImages(caseId: string): Promise<Array<{ id: string; mimeType: string; dicom?: { sopInstanceUid: string } }>> {
  return (await json<{ case: { images: Array<{ id: string; mimeType: string; dicom?: { sopInstanceUid: string } }> } }>(await t.api(`/cases/${caseId}`))).case.images;
}

describe("DICOM Part 10 in", () => {
  it("takes a .dcm as a multipart file and as base64 application/dicom in the case JSON", async () => {
    const form = new FormData();
    form.set("case", JSON.stringify(chestPain({ images: [{ id: "scan", caption: "Chest CT" } as never] })));
    form.set("scan", new Blob([new Uint8Array(ct)], { type: "application/dicom" }), "scan.dcm");
    const a = await t.api("/diagnose", { method: "POST", body: form });
    expect(a.status).toBe(201);
    expect(await storedImages(DiagnosisResult.parse(await a.json()).caseId)).toEqual([expect.objectContaining({ id: "scan", mimeType: "image/png", dicom: expect.objectContaining({ sopInstanceUid: "2.25.1001" }) })]);

    const b = await t.api("/diagnose", { method: "POST", json: chestPain({ images: [{ id: "scan", mimeType: "application/dicom", data: ct.toString("base64") }] }) });
    expect(b.status).toBe(201);
    expect((await storedImages(DiagnosisResult.parse(await b.json()).caseId))[0]).toMatchObject({ mimeType: "image/png", dicom: { sopInstanceUid: "2.25.1001" } });
  });

  it("refuses a truncated object with a 400 naming the image", async () => {
    const res = await t.api("/diagnose", { method: "POST", json: chestPain({ images: [{ id: "cut", data: ct.subarray(0, 600).toString("base64") }] }) });
    expect(res.status).toBe(400);
    expect((await json<{ message: string }>(res)).message).toMatch(/image "cut" \(DICOM\)/);
  });

  it("reads a DICOM attachment of a FHIR bundle, and answers a bad one with an OperationOutcome naming the attachment", async () => {
    const bundle = (data: Buffer) => ({
      resourceType: "Bundle",
      type: "collection",
      entry: [
        { resource: { resourceType: "Patient", id: "p1", gender: "male" } },
        { resource: { resourceType: "Media", id: "ct1", status: "completed", subject: { reference: "Patient/p1" }, content: { contentType: "application/dicom", data: data.toString("base64") } } },
      ],
    });
    const ok = await t.api("/diagnose", { method: "POST", headers: { "content-type": "application/fhir+json" }, body: JSON.stringify(bundle(ct)) });
    expect(ok.status).toBe(201);
    const huge = Buffer.from(ct);
    // Rows and Columns (explicit VR little endian: tag, "US", length 2, value) rewritten to 60000.
    for (const tag of [Buffer.from([0x28, 0x00, 0x10, 0x00]), Buffer.from([0x28, 0x00, 0x11, 0x00])]) huge.writeUInt16LE(60000, huge.indexOf(tag) + 8);
    const bad = await t.api("/diagnose", { method: "POST", headers: { "content-type": "application/fhir+json" }, body: JSON.stringify(bundle(huge)) });
    expect(bad.status).toBe(413);
    const oo = await json<OperationOutcome>(bad);
    expect(oo.resourceType).toBe("OperationOutcome");
    expect(oo.issue[0]).toMatchObject({ code: "too-costly", expression: ["Bundle.entry[1].resource.content.data"] });
    expect(oo.issue[0]!.diagnostics).toContain("60000×60000");
  });
});
