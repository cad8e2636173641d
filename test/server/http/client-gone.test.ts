// Keeps a real port: the test closes its own connection mid-request, which inject cannot do.
// A client that goes away while its case's images are being read stops that reading: the
// PACS request in flight is dropped and nothing more is asked of it.
import { createServer, type Server, type ServerResponse } from "node:http";
import { until } from "../../support/until.js";
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { stemiPrefetchWithStudy } from "../cds-hooks/stemi-prefetch.js";
import { chestPain, startTestServer, type TestServer } from "./http-harness.js";

let t: TestServer;
let pacs: Server;
let root: string;
const requests: string[] = [];
const abandoned: string[] = [];

beforeAll(async () => {
  // A PACS that lists a series of one instance, then never answers for the instance itself.
  pacs = createServer((req, res: ServerResponse) => {
    const url = req.url ?? "";
    requests.push(url);
    res.on("close", () => {
      if (!res.writableEnded) abandoned.push(url);
    });
    const json = (b: unknown) => res.writeHead(200, { "content-type": "application/dicom+json" }).end(JSON.stringify(b));
    if (url.endsWith("/studies/2.25.1/series")) json([{ "0020000E": { vr: "UI", Value: ["2.25.10"] } }]);
    else if (url.endsWith("/instances")) json([{ "00080018": { vr: "UI", Value: ["2.25.91"] }, "00200013": { vr: "IS", Value: [1] } }]);
    // The instance: held open.
  });
  await new Promise<void>((r) => pacs.listen(0, "127.0.0.1", r));
  root = `http://127.0.0.1:${(pacs.address() as { port: number }).port}/dicom-web`;
  // A DICOMweb timeout far beyond the test's: only the client's going away can drop the request in time.
  t = await startTestServer({ env: { MEDMMV_DICOMWEB_SERVERS: root, MEDMMV_DICOMWEB_TIMEOUT_MS: "600000" } });
});
afterAll(async () => {
  await t?.close();
  pacs.closeAllConnections();
  await new Promise((r) => pacs.close(r));
});

beforeEach(() => {
  requests.length = 0;
  abandoned.length = 0;
});

/**
 * Sends a request, closes it once the PACS is asked for the instance, and checks that this one PACS
 * request is dropped (the server's side of it closes unanswered) and that no other request follows.
 */
async function closedWhileTheInstanceIsFetched(send: (signal: AbortSignal) => Promise<unknown>): Promise<void> {
  const ctrl = new AbortController();
  const res = send(ctrl.signal).catch((e: unknown) => e);
  await until(() => requests.some((u) => u.endsWith("/instances/2.25.91")) || undefined);
  const asked = requests.length;
  ctrl.abort();
  await res;
  await until(() => abandoned.some((u) => u.endsWith("/instances/2.25.91")) || undefined);
  expect(requests.length).toBe(asked);
}

describe("a client that goes away during intake", () => {
  it("POST /diagnose closed while its DICOMweb image is fetched: the PACS request is dropped, none follows", async () => {
    await closedWhileTheInstanceIsFetched((signal) => t.api("/diagnose", { method: "POST", json: chestPain({ images: [{ id: "ct", dicomweb: { server: root, study: "2.25.1", accessToken: "the-caller's-own" } }] }), signal }));
  }, 20_000);

  it("a CDS Hooks call closed by the EHR while its ImagingStudy is fetched: the PACS request is dropped, none follows", async () => {
    const hook = { hook: "patient-view", hookInstance: randomUUID(), context: { userId: "Practitioner/dr-1", patientId: "stemi-1" }, prefetch: stemiPrefetchWithStudy(root, { studyUid: "2.25.1" }), fhirServer: "https://ehr.example.org/fhir", fhirAuthorization: { access_token: "ehr-pacs-token", token_type: "Bearer", expires_in: 300, scope: "patient/*.read", subject: "medmmv" } };
    await closedWhileTheInstanceIsFetched((signal) => t.api("/cds-services/medmmv-diagnosis", { method: "POST", json: hook, signal }));
  }, 20_000);
});
