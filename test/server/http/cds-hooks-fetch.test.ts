import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PREFETCH } from "../../../src/server/cds-hooks/discovery.js";
import { fetchMissingPrefetch, fetchNextPages, pagedPrefetch } from "../../../src/server/cds-hooks/fhir-fetch.js";

/** 60 two-byte characters: 60 UTF-16 units of text, 120 bytes on the wire. */
const ACCENTS = "é".repeat(60);
const BODY = JSON.stringify({ resourceType: "Patient", id: "p-1", name: [{ text: ACCENTS }] });
const KEYS = Object.keys(PREFETCH);

/** Requests held until every prefetch query has arrived (/together/): answered only if they are sent concurrently. */
let held: Array<() => void> = [];
let server: Server;
let base: string;
let seen: string[] = [];

function searchPage(res: ServerResponse, page: number, next: string | null): void {
  const entry = [{ resource: { resourceType: "Observation", id: `obs-${page}`, status: "final", code: { text: `page ${page}` } } }];
  res.writeHead(200, { "content-type": "application/fhir+json" }).end(JSON.stringify({ resourceType: "Bundle", type: "searchset", entry, ...(next ? { link: [{ relation: "self", url: "x" }, { relation: "next", url: next }] } : {}) }));
}

function route(req: IncomingMessage, res: ServerResponse): void {
  seen.push(req.url!);
  const url = new URL(req.url!, base);
  const [, scenario] = url.pathname.split("/");
  if (scenario === "declared") return void res.writeHead(200, { "content-type": "application/fhir+json", "content-length": String(Buffer.byteLength(BODY)) }).end(BODY);
  if (scenario === "chunked") {
    res.writeHead(200, { "content-type": "application/fhir+json" });
    res.write(BODY.slice(0, 40));
    return void res.end(BODY.slice(40));
  }
  if (scenario === "together") {
    held.push(() => res.writeHead(200, { "content-type": "application/fhir+json" }).end(url.pathname.includes("/Patient/") ? BODY : JSON.stringify({ resourceType: "Bundle", type: "searchset", entry: [] })));
    if (held.length === KEYS.length) for (const answer of held.splice(0)) answer();
    return;
  }
  if (scenario === "partly") {
    if (url.pathname.includes("/Condition")) return void res.writeHead(401, { "content-type": "application/fhir+json" }).end('{"resourceType":"OperationOutcome","issue":[]}');
    return void res.writeHead(200, { "content-type": "application/fhir+json" }).end(url.pathname.includes("/Patient/") ? BODY : JSON.stringify({ resourceType: "Bundle", type: "searchset", entry: [] }));
  }
  if (scenario === "paged") {
    // Page n links to page n+1, forever: only the cap stops the reader.
    const page = Number(url.searchParams.get("page") ?? "1");
    return searchPage(res, page, `${base}/paged/Observation?page=${page + 1}`);
  }
  if (scenario === "three-pages") {
    const page = Number(url.searchParams.get("page") ?? "1");
    return searchPage(res, page, page < 3 ? `${base}/three-pages/Observation?page=${page + 1}` : null);
  }
  if (scenario === "fails-at-three") {
    // Pages 1 and 2 come; page 3 is a server error.
    const page = Number(url.searchParams.get("page") ?? "1");
    if (page === 3) return void res.writeHead(503, { "content-type": "application/fhir+json" }).end('{"resourceType":"OperationOutcome","issue":[]}');
    return searchPage(res, page, `${base}/fails-at-three/Observation?page=${page + 1}`);
  }
  if (scenario === "elsewhere") return searchPage(res, 1, "http://169.254.169.254/latest/meta-data");
  res.writeHead(404).end();
}

beforeAll(async () => {
  server = createServer(route);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const options = (scenario: string, more: Record<string, unknown> = {}) => ({ fhirServer: `${base}/${scenario}`, accessToken: undefined, patientId: "p-1", allowList: [`${base}/${scenario}`], ...more });

describe("fetchMissingPrefetch", () => {
  const limit = Buffer.byteLength(BODY) - 1;

  it.each(["declared", "chunked"])("refuses an answer over maxBytes counted in bytes, not characters (%s)", async (how) => {
    expect(BODY.length).toBeLessThan(limit); // a count of characters would let it through
    const out = await fetchMissingPrefetch(["patient"], options(how, { maxBytes: limit }));
    expect(out.fetched.patient).toBeUndefined();
    expect(out.failed).toEqual([{ key: "patient", reason: expect.stringContaining(`larger than the ${limit} bytes`) }]);
  });

  it("reads an answer of exactly maxBytes", async () => {
    const out = await fetchMissingPrefetch(["patient"], options("chunked", { maxBytes: limit + 1 }));
    expect(out.fetched.patient).toEqual(JSON.parse(BODY));
  });

  it("is never called for a server off the allow-list: that is a programmer error, not an empty answer", async () => {
    await expect(fetchMissingPrefetch(["patient"], { ...options("declared"), allowList: [] })).rejects.toThrow(/not on the allow-list/);
  });

  it("sends the queries concurrently: a server that answers only once all have arrived answers them all", async () => {
    held = [];
    const out = await fetchMissingPrefetch(KEYS, options("together", { timeoutMs: 10_000 }));
    expect(out.failed).toEqual([]);
    expect(Object.keys(out.fetched).sort()).toEqual([...KEYS].sort());
  });

  it("one failed query fails alone, and says why without patient data", async () => {
    const out = await fetchMissingPrefetch(KEYS, options("partly"));
    expect(out.failed).toEqual([{ key: "conditions", reason: "the FHIR server answered 401 (the call sent no fhirAuthorization)" }]);
    expect(out.fetched.patient).toEqual(JSON.parse(BODY));
    expect(Object.keys(out.fetched)).toHaveLength(KEYS.length - 1);
  });

  it("follows link[next] and joins the pages into one searchset", async () => {
    const out = await fetchMissingPrefetch(["observations"], options("three-pages"));
    const bundle = out.fetched.observations as { entry: Array<{ resource: { id: string } }>; link?: unknown };
    expect(bundle.entry.map((e) => e.resource.id)).toEqual(["obs-1", "obs-2", "obs-3"]);
    expect(bundle.link).toBeUndefined();
    expect(out.truncated).toEqual([]);
  });

  it("stops at maxPages and says the search was cut", async () => {
    seen = [];
    const out = await fetchMissingPrefetch(["observations"], options("paged", { maxPages: 4 }));
    expect((out.fetched.observations as { entry: unknown[] }).entry).toHaveLength(4);
    expect(seen).toHaveLength(4);
    expect(out.truncated).toEqual([{ key: "observations", reason: "only its first 4 pages were read" }]);
  });

  it("a next page that fails keeps the pages read before it, and says after how many entries the search stopped", async () => {
    const out = await fetchMissingPrefetch(["observations"], options("fails-at-three"));
    expect((out.fetched.observations as { entry: Array<{ resource: { id: string } }> }).entry.map((e) => e.resource.id)).toEqual(["obs-1", "obs-2"]);
    expect(out.failed).toEqual([]);
    expect(out.truncated).toEqual([{ key: "observations", reason: "a next page could not be read: the FHIR server answered 503", said: "observations after the first 2 (a next page could not be read: the FHIR server answered 503)" }]);
    // The same for a search the EHR sent its first page of (fetchNextPages).
    const first = { resourceType: "Bundle", type: "searchset", entry: [{ resource: { resourceType: "Observation", id: "obs-1" } }], link: [{ relation: "next", url: `${base}/fails-at-three/Observation?page=2` }] };
    const pages = await fetchNextPages(pagedPrefetch({ observations: first }), options("fails-at-three"));
    expect((pages.fetched.observations as { entry: Array<{ resource: { id: string } }> }).entry.map((e) => e.resource.id)).toEqual(["obs-1", "obs-2"]);
    expect(pages.notRead).toEqual([{ key: "observations", reason: "a next page could not be read: the FHIR server answered 503", said: "observations after the first 2 (a next page could not be read: the FHIR server answered 503)" }]);
  });

  it("never follows a next link off the FHIR server", async () => {
    const out = await fetchMissingPrefetch(["observations"], options("elsewhere"));
    // What the EHR's own server sent first is kept; the search ends at the link it will not follow, and says after how many.
    expect(out.failed).toEqual([]);
    const kept = (out.fetched.observations as { entry: unknown[] }).entry.length;
    expect(kept).toBeGreaterThan(0);
    expect(out.truncated).toEqual([{ key: "observations", reason: 'a next page could not be read: the next page of "observations" is not on the FHIR server', said: `observations after the first ${kept} (a next page could not be read: the next page of "observations" is not on the FHIR server)` }]);
  });
});
