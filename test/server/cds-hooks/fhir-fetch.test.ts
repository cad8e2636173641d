// A real FHIR stand-in on a socket: the point is what goes over the wire (which URLs, which Authorization header).
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fetchMissingPrefetch, sameFhirServer } from "../../../src/server/cds-hooks/fhir-fetch.js";

const TOKEN = "ehr-token-for-fhir-only";
let server: Server;
let base: string;
let origin: string;
const requests: Array<{ url: string; auth: string | undefined }> = [];
/** The next link each first page of Observations carries (set per test). */
let nextLink = "";

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res) => {
    requests.push({ url: req.url!, auth: req.headers.authorization });
    const page = (entry: unknown[], next?: string) => JSON.stringify({ resourceType: "Bundle", type: "searchset", entry, ...(next ? { link: [{ relation: "next", url: next }] } : {}) });
    res.setHeader("content-type", "application/fhir+json");
    if (req.url!.startsWith("/fhir/Observation?")) return void res.end(page([{ resource: { resourceType: "Observation", id: "o1" } }], nextLink));
    if (req.url!.startsWith("/fhir/page2")) return void res.end(page([{ resource: { resourceType: "Observation", id: "o2" } }]));
    res.end(page([]));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  base = `${origin}/fhir`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const fetchObservations = () => fetchMissingPrefetch(["observations"], { fhirServer: base, accessToken: TOKEN, patientId: "p1", allowList: [base], timeoutMs: 30_000 });

describe("next-page links of a FHIR search", () => {
  it("a next page under the base is followed, with the token", async () => {
    nextLink = `${base}/page2?n=2`;
    const before = requests.length;
    const got = await fetchObservations();
    expect(got.failed).toEqual([]);
    expect((got.fetched.observations as { entry: unknown[] }).entry).toHaveLength(2);
    expect(requests.slice(before).map((r) => r.url)).toEqual(["/fhir/Observation?patient=p1&_sort=-date&_count=100", "/fhir/page2?n=2"]);
  });

  it.each([
    ["a `..` segment", () => `${base}/../admin/Patient`],
    ["an encoded `%2e%2e` segment", () => `${base}/%2e%2e/admin/Patient`],
    ["an upper-case `%2E%2E` segment", () => `${base}/%2E%2E/admin`],
    ["a `.%2e` segment", () => `${base}/.%2e/admin`],
    ["an encoded slash", () => `${base}/..%2fadmin`],
    ["a backslash", () => `${base}/..\\admin`],
    ["a prefix that is another path", () => `${origin}/fhir-admin/Patient`],
    ["another port", () => base.replace(/:\d+\//, ":1/")],
    ["credentials in the URL", () => base.replace("http://", "http://user:pw@") + "/page2"],
    ["a `..;` segment (a path parameter Java servers strip)", () => `${base}/..;/admin/Patient`],
    ["an encoded `..%3b` segment", () => `${base}/..%3b/admin/Patient`],
    ["a double-encoded `%252e%252e` segment", () => `${base}/%252e%252e/admin/Patient`],
    ["a double-encoded slash `%252f`", () => `${base}/..%252fadmin`],
    ["a `..%00` segment (NUL)", () => `${base}/..%00/admin/Patient`],
    ["an encoded control character", () => `${base}/page2%0d%0aX-Injected:%201`],
  ])("%s is refused without sending the token anywhere", async (_name, link) => {
    nextLink = link();
    const before = requests.length;
    const got = await fetchObservations();
    // The first page, from the EHR's own server, is kept; the search stops at the link it will not follow, and says so.
    expect(got.failed).toEqual([]);
    expect((got.fetched.observations as { entry: unknown[] }).entry).toHaveLength(1);
    expect(got.truncated).toEqual([{ key: "observations", reason: 'a next page could not be read: the next page of "observations" is not on the FHIR server', said: 'observations after the first 1 (a next page could not be read: the next page of "observations" is not on the FHIR server)' }]);
    const sent = requests.slice(before);
    expect(sent.map((r) => r.url)).toEqual(["/fhir/Observation?patient=p1&_sort=-date&_count=100"]);
    expect(sent.every((r) => r.auth === `Bearer ${TOKEN}`)).toBe(true);
  });

  it("compares after normalisation: host case and the default port are the same server; `.` segments that stay under the base are fine", () => {
    expect(sameFhirServer("HTTPS://EHR.example.org:443/fhir/Observation?page=2", "https://ehr.example.org/fhir")).toBe("https://ehr.example.org/fhir/Observation?page=2");
    expect(sameFhirServer("https://ehr.example.org/fhir/./x/../Observation", "https://ehr.example.org/fhir/")).toBe("https://ehr.example.org/fhir/Observation");
    expect(sameFhirServer("https://ehr.example.org/fhir?page=2", "https://ehr.example.org/fhir")).toBe("https://ehr.example.org/fhir?page=2");
    expect(sameFhirServer("https://ehr.example.org/fhir/../fhir2/x", "https://ehr.example.org/fhir")).toBeNull();
    expect(sameFhirServer("not a url", "https://ehr.example.org/fhir")).toBeNull();
  });
});
