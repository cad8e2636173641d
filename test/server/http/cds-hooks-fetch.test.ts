import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fetchMissingPrefetch } from "../../../src/server/cds-hooks/fhir-fetch.js";
import { isMedmmvError } from "../../../src/core/contracts/errors.js";

/** 60 two-byte characters: 60 UTF-16 units of text, 120 bytes on the wire. */
const ACCENTS = "é".repeat(60);
const BODY = JSON.stringify({ resourceType: "Patient", id: "p-1", name: [{ text: ACCENTS }] });

let server: Server;
let base: string;
beforeAll(async () => {
  server = createServer((req, res) => {
    // /declared answers with a content-length; /chunked streams without one.
    if (req.url?.startsWith("/declared/")) res.writeHead(200, { "content-type": "application/fhir+json", "content-length": String(Buffer.byteLength(BODY)) }).end(BODY);
    else {
      res.writeHead(200, { "content-type": "application/fhir+json" });
      res.write(BODY.slice(0, 40));
      res.end(BODY.slice(40));
    }
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

async function refusal(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => expect.unreachable("the fetch was not refused"),
    (err: unknown) => err,
  );
}

describe("fetchMissingPrefetch", () => {
  const limit = Buffer.byteLength(BODY) - 1;

  it.each(["declared", "chunked"])("refuses an answer over maxBytes counted in bytes, not characters (%s)", async (how) => {
    expect(BODY.length).toBeLessThan(limit); // a count of characters would let it through
    const fhirServer = `${base}/${how}`;
    const err = await refusal(fetchMissingPrefetch(["patient"], { fhirServer, accessToken: undefined, patientId: "p-1", allowList: [fhirServer], maxBytes: limit }));
    expect(isMedmmvError(err) && err.code).toBe("PAYLOAD_TOO_LARGE");
  });

  it("reads an answer of exactly maxBytes", async () => {
    const fhirServer = `${base}/chunked`;
    const out = await fetchMissingPrefetch(["patient"], { fhirServer, accessToken: undefined, patientId: "p-1", allowList: [fhirServer], maxBytes: limit + 1 });
    expect(out.patient).toEqual(JSON.parse(BODY));
  });

  it("is never called for a server off the allow-list: that is a programmer error, not an empty answer", async () => {
    const err = await refusal(fetchMissingPrefetch(["patient"], { fhirServer: `${base}/declared`, accessToken: undefined, patientId: "p-1", allowList: [] }));
    expect(isMedmmvError(err)).toBe(false);
  });
});
