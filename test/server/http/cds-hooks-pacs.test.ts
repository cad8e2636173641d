import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stemiPrefetchWithStudy } from "../cds-hooks/stemi-prefetch.js";
import { syntheticCt } from "../../core/intake/dicom/dicom-fixtures.js";
import { startInjectServer, type InjectServer } from "./inject-harness.js";

/** Two PACS that record every request: one allow-listed, one not. */
interface Pacs {
  root: string;
  requests: IncomingMessage[];
  server: Server;
}
async function startPacs(): Promise<Pacs> {
  const file = syntheticCt(undefined, { StudyInstanceUID: "2.25.7", SeriesInstanceUID: "2.25.70", SOPInstanceUID: "2.25.701" }).file;
  const requests: IncomingMessage[] = [];
  const server = createServer((req, res) => {
    requests.push(req);
    const url = req.url!;
    if (url.endsWith("/series")) return void res.writeHead(200, { "content-type": "application/dicom+json" }).end(JSON.stringify([{ "0020000E": { vr: "UI", Value: ["2.25.70"] } }]));
    if (url.endsWith("/instances")) return void res.writeHead(200, { "content-type": "application/dicom+json" }).end(JSON.stringify([{ "00080018": { vr: "UI", Value: ["2.25.701"] } }]));
    const b = "pacs-boundary";
    res.writeHead(200, { "content-type": `multipart/related; type="application/dicom"; boundary=${b}` });
    res.end(Buffer.concat([Buffer.from(`--${b}\r\nContent-Type: application/dicom\r\n\r\n`), file, Buffer.from(`\r\n--${b}--\r\n`)]));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { root: `http://127.0.0.1:${(server.address() as { port: number }).port}/dicom-web`, requests, server };
}

let listed: Pacs;
let unlisted: Pacs;
let t: InjectServer;
beforeAll(async () => {
  listed = await startPacs();
  unlisted = await startPacs();
  t = await startInjectServer({ env: { MEDMMV_DICOMWEB_SERVERS: listed.root } });
});
afterAll(async () => {
  await t.close();
  for (const p of [listed, unlisted]) await new Promise((r) => p.server.close(r));
});

const AUTH = { access_token: "ehr-pacs-token", token_type: "Bearer", expires_in: 300, scope: "patient/*.read", subject: "medmmv" };
const hook = (body: Record<string, unknown>) => t.api("/cds-services/medmmv-diagnosis", { method: "POST", json: { hook: "patient-view", hookInstance: randomUUID(), context: { userId: "Practitioner/dr-1", patientId: "stemi-1" }, ...body } });

describe("CDS Hooks: the EHR's authority reaches the PACS its ImagingStudy names, when allow-listed", () => {
  it("the fhirAuthorization token is sent to the allow-listed PACS, and the study is read", async () => {
    const res = await hook({ prefetch: stemiPrefetchWithStudy(listed.root), fhirServer: "https://ehr.example.org/fhir", fhirAuthorization: AUTH });
    expect(res.status, await res.clone().text()).toBe(200);
    expect(listed.requests.length).toBeGreaterThan(0);
    expect(listed.requests.every((r) => r.headers.authorization === "Bearer ehr-pacs-token")).toBe(true);
  });

  it("a PACS off the allow-list gets neither a request nor the token", async () => {
    const res = await hook({ prefetch: stemiPrefetchWithStudy(unlisted.root), fhirServer: "https://ehr.example.org/fhir", fhirAuthorization: AUTH });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { message: string }).message).toMatch(/not in MEDMMV_DICOMWEB_SERVERS; it was not contacted/);
    expect(unlisted.requests).toHaveLength(0);
  });

  it("an API-key call without fhirAuthorization cannot lend the service's standing to the PACS (403)", async () => {
    const before = listed.requests.length;
    // Another record (a record already analysed for this key would be answered from its case).
    const res = await hook({ prefetch: stemiPrefetchWithStudy(listed.root, { id: "ct3" }) });
    expect(res.status).toBe(403);
    expect(((await res.json()) as { message: string }).message).toMatch(/must send its own accessToken for the PACS/);
    expect(listed.requests.length).toBe(before);
  });
});
