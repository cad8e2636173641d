// Keeps a real port: Chromium loads the audit view over HTTP. A real PACS (Orthanc + DICOMweb) serves the studies.
import { createServer, type Server } from "node:http";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DiagnosisResult } from "../../../src/core/contracts/diagnosis-result.js";
import { openReady, useChromium } from "../../support/browser.js";
import { recordingImageDoctor } from "./recording-scenario.js";
import { startOrthanc, type OrthancServer } from "../../support/orthanc.js";
import { dicomFile, expectedGrey, LOSSLESS, PHI_CANARIES, syntheticCt, transcode } from "../../core/intake/dicom/dicom-fixtures.js";
import { createHash } from "node:crypto";
import { chestPain, KEY_A, KEY_B, startTestServer, VIEW_ENV, type TestServer } from "./http-harness.js";

/** Every prompt text and image URL each vision-model call carried. */
const calls: Array<{ text: string; images: string[] }> = [];
let orthanc: OrthancServer;
let t: TestServer;
let ct: { hu: number[] };
const browser = useChromium();

beforeAll(async () => {
  orthanc = await startOrthanc();
  // Synthetic study 2.25.1: one CT (known HU), with a canary in every PS3.15 basic-profile identifying attribute.
  const made = syntheticCt();
  ct = made;
  await orthanc.store(
    dicomFile({
      modality: "CT", rows: 32, columns: 32, stored: new Int16Array(made.hu.map((h) => h + 1024)), signed: true, slope: 1, intercept: -1024,
      extra: { ...PHI_CANARIES, PatientAge: "061Y", PatientSex: "M", BodyPartExamined: "CHEST" },
    }),
  );
  // Study 2.25.2: an MR series of six 16-bit instances (InstanceNumber 1–6, stored out of order).
  for (const n of [4, 1, 6, 2, 5, 3]) {
    await orthanc.store(dicomFile({ modality: "MR", rows: 8, columns: 8, stored: new Uint16Array(64).fill(n * 1000), window: { center: 3500, width: 7000 }, extra: { StudyInstanceUID: "2.25.2", SeriesInstanceUID: "2.25.20", SOPInstanceUID: `2.25.200${n}`, InstanceNumber: String(n) } }));
  }
  // Study 2.25.3: the same CT once in each lossless compressed transfer syntax (and big endian), one instance each.
  for (const [k, ts] of Object.values(LOSSLESS).entries()) {
    const uids = { StudyInstanceUID: "2.25.3", SeriesInstanceUID: "2.25.30", SOPInstanceUID: `2.25.300${k + 1}`, InstanceNumber: String(k + 1) };
    await orthanc.store(await transcode(syntheticCt(undefined, uids).file, ts));
  }
  t = await startTestServer({
    scenario: recordingImageDoctor(calls),
    env: {
      ...VIEW_ENV,
      MEDMMV_DICOMWEB_SERVERS: orthanc.dicomweb,
      MEDMMV_DICOMWEB_TIMEOUT_MS: "10000",
      MEDMMV_DICOMWEB_MAX_INSTANCES: "4",
      // Key A's tenant may use this service's standing with the test PACS; key B must bring a token.
      MEDMMV_DICOMWEB_TENANT_SERVERS: JSON.stringify({ [createHash("sha256").update(KEY_A).digest("hex")]: [orthanc.dicomweb] }),
    },
  });
}, 120_000);
afterAll(async () => {
  await t?.close();
  await orthanc?.close();
});

async function greys(url: string): Promise<number[]> {
  const b64 = url.replace(/^data:image\/png;base64,/, "");
  const { data, info } = await sharp(Buffer.from(b64, "base64")).raw().toBuffer({ resolveWithObject: true });
  return Array.from({ length: info.width * info.height }, (_, i) => data[i * info.channels]!);
}

describe("DICOMweb: Orthanc → case → rendered frames → the vision model", () => {
  it("fetches a `dicomweb` study over WADO-RS, windows the CT as documented, and the audit view shows its UIDs and window", async () => {
    calls.length = 0;
    const res = await t.api("/diagnose", { method: "POST", json: chestPain({ images: [{ id: "ct", dicomweb: { server: orthanc.dicomweb, study: "2.25.1" } }] }) });
    expect(res.status).toBe(201);
    const result = DiagnosisResult.parse(await res.json());
    expect(calls.length).toBeGreaterThan(0);
    const got = await greys(calls[0]!.images[0]!);
    expect(Math.max(...got.map((g, i) => Math.abs(g - expectedGrey(ct.hu[i]!, 40, 400))))).toBeLessThanOrEqual(1);

    // No header value of the object reaches a prompt, the result or the log.
    const everything = [calls.map((c) => c.text).join("\n"), JSON.stringify(result), t.logs.text()].join("\n");
    for (const [tag, value] of Object.entries(PHI_CANARIES)) {
      for (const word of value.split(/[^A-Za-z0-9]+/).filter((w) => w.length >= 4 && !/^(chest|for|history|of|lane|road|general|hospital)$/i.test(w))) {
        expect(everything, `${tag}: "${word}"`).not.toContain(word);
      }
    }
    // …while the de-identified context does.
    expect(calls[0]!.text).toContain("61 y");

    const made = await t.api(`/cases/${result.caseId}/view-links`, { method: "POST", json: {} });
    const { url } = (await made.json()) as { url: string };
    const page = await browser().newPage();
    await openReady(page, t.base + url);
    const shown = await page.getByTestId("dicom-provenance").first().innerText();
    expect(shown).toContain("2.25.1001"); // SOP Instance UID
    expect(shown).toContain("2.25.10"); // series
    expect(shown).toContain("1 of 1");
    expect(shown).toContain("C40 / W400 (CT soft tissue (default))");
    await page.close();
  }, 60_000);

  it("reads an ImagingStudy with a DICOMweb Endpoint from a FHIR bundle: the chosen series, instances capped and in order", async () => {
    calls.length = 0;
    const bundle = {
      resourceType: "Bundle",
      type: "collection",
      entry: [
        { resource: { resourceType: "Patient", id: "p1", gender: "female" } },
        { resource: { resourceType: "Endpoint", id: "pacs", status: "active", connectionType: { system: "http://terminology.hl7.org/CodeSystem/endpoint-connection-type", code: "dicom-wado-rs" }, payloadType: [{ text: "DICOM" }], address: orthanc.dicomweb } },
        { resource: { resourceType: "ImagingStudy", id: "mr1", status: "available", subject: { reference: "Patient/p1" }, identifier: [{ system: "urn:dicom:uid", value: "urn:oid:2.25.2" }], modality: [{ system: "http://dicom.nema.org/resources/ontology/DCM", code: "MR" }], endpoint: [{ reference: "Endpoint/pacs" }] } },
      ],
    };
    const res = await t.api("/diagnose", { method: "POST", headers: { "content-type": "application/fhir+json" }, body: JSON.stringify(bundle) });
    expect(res.status).toBe(201);
    const images = calls[0]!.images;
    expect(images).toHaveLength(4); // six instances, capped at four, evenly spaced: 1, 3, 4, 6
    // Instance n holds the value 1000·n everywhere: each picture is its instance, windowed by the object's own window.
    for (const [k, url] of images.entries()) {
      const want = expectedGrey([1000, 3000, 4000, 6000][k]!, 3500, 7000);
      for (const g of await greys(url)) expect(Math.abs(g - want)).toBeLessThanOrEqual(1);
    }
  }, 60_000);

  it("round-trips each compressed transfer syntax through Orthanc: every one windowed like the uncompressed CT", async () => {
    calls.length = 0;
    const series = { server: orthanc.dicomweb, study: "2.25.3", series: "2.25.30" };
    const res = await t.api("/diagnose", { method: "POST", json: chestPain({ images: [{ id: "ct", dicomweb: series }] }) });
    expect(res.status).toBe(201);
    const result = DiagnosisResult.parse(await res.json());
    const stored = (await (await t.api(`/cases/${result.caseId}`)).json()) as { case: { images: Array<{ dicom: { transferSyntaxUid: string } }> } };
    // Five instances, four sent (1, 2, 4, 5 by InstanceNumber): RLE, JPEG lossless, JPEG 2000, big endian.
    const sent = Object.values(LOSSLESS).filter((_, k) => k !== 2);
    expect(stored.case.images.map((i) => i.dicom.transferSyntaxUid)).toEqual(sent);
    for (const url of calls[0]!.images) {
      const got = await greys(url);
      expect(Math.max(...got.map((g, i) => Math.abs(g - expectedGrey(ct.hu[i]!, 40, 400))))).toBeLessThanOrEqual(1);
    }
  }, 60_000);

  it("an API key without a PACS token of its own, and no server configured for it, gets 403; with a token the study is read", async () => {
    const without = await t.api("/diagnose", { method: "POST", key: KEY_B, json: chestPain({ images: [{ id: "ct", dicomweb: { server: orthanc.dicomweb, study: "2.25.1" } }] }) });
    expect(without.status).toBe(403);
    expect(((await without.json()) as { message: string }).message).toMatch(/must send its own accessToken for the PACS/);
    const withToken = await t.api("/diagnose", { method: "POST", key: KEY_B, json: chestPain({ images: [{ id: "ct", dicomweb: { server: orthanc.dicomweb, study: "2.25.1", accessToken: "caller-own-token" } }] }) });
    expect(withToken.status).toBe(201);
  }, 60_000);

  it("never contacts a server that is not allow-listed", async () => {
    let hits = 0;
    const other: Server = createServer((_req, res) => {
      hits++;
      res.end("[]");
    });
    await new Promise<void>((r) => other.listen(0, "127.0.0.1", r));
    try {
      const server = `http://127.0.0.1:${(other.address() as { port: number }).port}/dicom-web`;
      const res = await t.api("/diagnose", { method: "POST", json: chestPain({ images: [{ id: "x", dicomweb: { server, study: "2.25.1" } }] }) });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { message: string }).message).toMatch(/not in MEDMMV_DICOMWEB_SERVERS; it was not contacted/);
      expect(hits).toBe(0);
    } finally {
      await new Promise((r) => other.close(r));
    }
  });
});
