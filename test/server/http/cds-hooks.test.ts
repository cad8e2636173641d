// Uses app.inject for the main server (discovery, hook responses, JWT and CORS checks need no socket); the replica, remote-JWKS, rate-limit and unconfigured servers keep real ports (a second process on the store, throttling by client address).
import { randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import { fixtureBundle } from "../../core/intake/fhir/fhir-fixtures.js";
import { stemiPrefetch as prefetch } from "../cds-hooks/stemi-prefetch.js";
import { json, KEY_A, startTestServer, until } from "./http-harness.js";
import { startInjectServer, type InjectServer } from "./inject-harness.js";

/** CDS Hooks 2.0 shapes, written from the specification (cds-hooks.hl7.org/2.0), not from our code. */
const SpecDiscovery = z.object({
  services: z.array(z.object({ hook: z.string(), title: z.string().optional(), description: z.string(), id: z.string(), prefetch: z.record(z.string(), z.string()).optional(), usageRequirements: z.string().optional() })).min(1),
});
const SpecCard = z.object({
  uuid: z.string().optional(),
  summary: z.string().max(140),
  detail: z.string().optional(),
  indicator: z.enum(["info", "warning", "critical"]),
  source: z.object({ label: z.string().min(1), url: z.string().url().optional(), icon: z.string().optional(), topic: z.unknown().optional() }),
  suggestions: z.array(z.unknown()).optional(),
  selectionBehavior: z.string().optional(),
  overrideReasons: z.array(z.unknown()).optional(),
  links: z.array(z.object({ label: z.string(), url: z.string().url(), type: z.enum(["absolute", "smart"]), appContext: z.string().optional() })).optional(),
});
const SpecResponse = z.object({ cards: z.array(SpecCard), systemActions: z.array(z.unknown()).optional() });

/** The hook request as the specification defines it (§HTTP request), to check what the tests send is one. */
const SpecRequest = z.object({
  hook: z.string(),
  // "A universally unique identifier": EHRs send GUIDs of every make, not only RFC 4122 ones.
  hookInstance: z.guid(),
  fhirServer: z.string().url().optional(),
  fhirAuthorization: z.object({ access_token: z.string(), token_type: z.literal("Bearer"), expires_in: z.number().int(), scope: z.string(), subject: z.string() }).optional(),
  context: z.object({ userId: z.string(), patientId: z.string(), encounterId: z.string().optional() }),
  prefetch: z.record(z.string(), z.unknown()).optional(),
});

const ISS = "https://ehr.example.org";
/** The inject server's base (inject-harness.ts): what EHRs call it, so MEDMMV_PUBLIC_URL. */
const PUBLIC_URL = "http://inject.invalid:8080";
const SANDBOX = "https://sandbox.cds-hooks.org";

/**
 * A stand-in FHIR server that answers the prefetch queries from a fixture and counts what it is asked;
 * `refuses` are resource types it answers 401 for (a token without that scope).
 */
async function fakeFhirServer(refuses: readonly string[] = [], extra: ReadonlyArray<Record<string, unknown>> = []): Promise<{ base: string; requests: IncomingMessage[]; close(): Promise<void> }> {
  const record = [...fixtureBundle("stemi").entry.map((e) => e.resource), ...extra];
  const requests: IncomingMessage[] = [];
  const server: Server = createServer((req, res) => {
    requests.push(req);
    const url = new URL(req.url!, "http://x");
    const [, , type, id] = url.pathname.split("/"); // /fhir/{type}[/{id}]
    if (refuses.includes(type!)) return void res.writeHead(401, { "content-type": "application/fhir+json" }).end('{"resourceType":"OperationOutcome","issue":[]}');
    const body = id
      ? record.find((r) => r.resourceType === type && r.id === id)
      : { resourceType: "Bundle", type: "searchset", entry: record.filter((r) => r.resourceType === type || (type?.startsWith("Medication") && r.resourceType === "Medication")).map((resource) => ({ resource })) };
    res.writeHead(body ? 200 : 404, { "content-type": "application/fhir+json" }).end(JSON.stringify(body ?? { resourceType: "OperationOutcome", issue: [] }));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}/fhir`, requests, close: () => new Promise((r) => server.close(() => r())) };
}

let t: InjectServer;
let dir: string;
let listed: Awaited<ReturnType<typeof fakeFhirServer>>;
let unlisted: Awaited<ReturnType<typeof fakeFhirServer>>;
let strict: Awaited<ReturnType<typeof fakeFhirServer>>;
let noPatients: Awaited<ReturnType<typeof fakeFhirServer>>;
let ehrKey: CryptoKey;
let ehrJwks: string;
let strangerKey: CryptoKey;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "medmmv-cds-"));
  const ehr = await generateKeyPair("ES384");
  const stranger = await generateKeyPair("ES384");
  ehrKey = ehr.privateKey;
  strangerKey = stranger.privateKey;
  const jwks = path.join(dir, "ehr-jwks.json");
  ehrJwks = JSON.stringify({ keys: [{ ...(await exportJWK(ehr.publicKey)), kid: "ehr-1", alg: "ES384", use: "sig" }] });
  await writeFile(jwks, ehrJwks);
  listed = await fakeFhirServer([], [{ resourceType: "Binary", id: "rad-1", contentType: "text/plain", data: Buffer.from("CT chest: no pulmonary embolism. Small left pleural effusion.").toString("base64") }]);
  unlisted = await fakeFhirServer();
  strict = await fakeFhirServer(["Condition"]);
  noPatients = await fakeFhirServer(["Patient"]);
  t = await startInjectServer({
    // Three runs: the STEMI in two wordings (one written with an abbreviation), pericarditis once.
    scenario: clinicalScenario({ rolloutAnswers: ["Inferior ST-elevation myocardial infarction", "Inferior STEMI", "Acute pericarditis"], identicalReasoning: false }),
    env: { MEDMMV_CDS_JWKS: jwks, MEDMMV_CDS_ISSUERS: ISS, MEDMMV_FHIR_SERVERS: [listed.base, strict.base, noPatients.base].join(","), MEDMMV_CORS_ORIGINS: SANDBOX, MEDMMV_PUBLIC_URL: PUBLIC_URL, MEDMMV_AUTH_FAILURES_PER_MIN: "10000" },
    // This suite sends dozens of refused tokens on purpose; the failed-attempt budget has its own test below.
  });
});
afterAll(async () => {
  await t.close();
  await listed.close();
  await unlisted.close();
  await strict.close();
  await noPatients.close();
  await rm(dir, { recursive: true, force: true });
});

const SERVICE = "/cds-services/medmmv-diagnosis";

async function jwt(o: { aud?: string; iss?: string; exp?: number; iat?: number; jti?: string; key?: CryptoKey; kid?: string } = {}): Promise<string> {
  return new SignJWT({})
    .setProtectedHeader({ alg: "ES384", kid: o.kid ?? "ehr-1", typ: "JWT" })
    .setIssuer(o.iss ?? ISS)
    .setAudience(o.aud ?? `${PUBLIC_URL}${SERVICE}`)
    .setIssuedAt(o.iat)
    .setExpirationTime(o.exp ?? Math.floor(Date.now() / 1000) + 300)
    .setJti(o.jti ?? randomUUID())
    .sign(o.key ?? ehrKey);
}

/** fetch, but a URL under the inject server's base goes through app.inject (no key: the EHR sends only its JWT). */
function send(to: string | URL, init: RequestInit = {}): Promise<Response> {
  const url = String(to);
  return url.startsWith(t.base) ? t.api(url.slice(t.base.length), { ...init, key: null }) : fetch(url, init);
}

/** A hook call to `base` (the test server unless another is named). */
function call(token: string | null, body: Record<string, unknown> = {}, base = t.base) {
  const request = SpecRequest.parse({ hook: "patient-view", hookInstance: randomUUID(), context: { userId: "Practitioner/dr-1", patientId: "stemi-1" }, prefetch: prefetch(), ...body });
  return send(`${base}${SERVICE}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(request),
  });
}

describe("CDS Hooks 2.0", () => {
  it("discovery lists one patient-view service with its prefetch, without credentials", async () => {
    const res = await send(`${t.base}/cds-services`);
    expect(res.status).toBe(200);
    const doc = SpecDiscovery.parse(await res.json());
    expect(doc.services).toHaveLength(1);
    expect(doc.services[0]).toMatchObject({ id: "medmmv-diagnosis", hook: "patient-view" });
    expect(Object.keys(doc.services[0]!.prefetch!)).toEqual(expect.arrayContaining(["patient", "conditions", "observations", "medicationStatements", "allergies"]));
    expect(doc.services[0]!.prefetch!.patient).toBe("Patient/{{context.patientId}}");
  });

  it("a first call starts the case and answers at once with an info card; the same record again gets the finished case's card, without model calls", async () => {
    const first = await call(await jwt());
    expect(first.status).toBe(200);
    const r1 = SpecResponse.parse(await first.json());
    expect(r1.cards).toHaveLength(1);
    expect(r1.cards[0]).toMatchObject({ indicator: "info", source: { label: "medmmv" } });
    const link = new URL(r1.cards[0]!.links![0]!.url);
    const caseId = decodeURIComponent(link.pathname.split("/")[2]!);
    expect(link.origin).toBe(t.base);
    await until(async () => ((await t.server.store.getCase(caseId))?.result ? true : undefined), 20_000, `case ${caseId} finished`);
    // The signed link opens the audit view without an API key.
    expect((await send(link)).status).toBe(200);

    const calls = t.openai.stats().total;
    const second = await call(await jwt());
    const r2 = SpecResponse.parse(await second.json());
    expect(t.openai.stats().total).toBe(calls);
    const card = r2.cards[0]!;
    expect(card.summary).toMatch(/^medmmv: Inferior ST-elevation myocardial infarction \(support \d+%\)$/);
    expect(card.summary.length).toBeLessThanOrEqual(140);
    expect(card.indicator).toBe("info");
    expect(new URL(card.links![0]!.url).pathname).toBe(link.pathname);
    expect(card.detail).toContain("Decision support for clinicians; not a diagnosis.");
    // The detail lists the differential with how many runs named each diagnosis.
    expect(card.detail).toMatch(/\*\*Differential:\*\*\n1\. Inferior ST-elevation myocardial infarction — 2 of 3 runs, best path CU \d\.\d\d\n2\. Acute pericarditis — 1 of 3 runs/);
  });

  it("a record with no dated fact is the same record on the next call: its second call answers from the stored case, without model calls", async () => {
    // The Patient and an undated allergy: nothing dates the record, so its reference date is the clock's.
    // (A Patient alone holds no clinical fact and is refused.)
    const { patient } = prefetch() as { patient: { id: string } };
    const allergy = { resourceType: "AllergyIntolerance", id: "undated-1", code: { text: "Latex" }, patient: { reference: `Patient/${patient.id}` } };
    const record = { patient, allergies: { resourceType: "Bundle", type: "searchset", entry: [{ resource: allergy }] } };
    const first = SpecResponse.parse(await (await call(await jwt(), { prefetch: record })).json());
    const link = new URL(first.cards[0]!.links![0]!.url);
    const caseId = decodeURIComponent(link.pathname.split("/")[2]!);
    await until(async () => ((await t.server.store.getCase(caseId))?.result ? true : undefined), 20_000, `case ${caseId} finished`);

    const calls = t.openai.stats().total;
    const second = SpecResponse.parse(await (await call(await jwt(), { prefetch: record })).json());
    expect(new URL(second.cards[0]!.links![0]!.url).pathname).toBe(link.pathname);
    expect(second.cards[0]!.summary).toMatch(/^medmmv: /);
    expect(t.openai.stats().total).toBe(calls);
  });

  it("a record whose analysis failed is analysed again by the next call", async () => {
    const { allergies: _left, ...record } = prefetch(); // another record than the other tests'
    t.openai.addFault({ kind: "status", status: 400, agent: "rollout" });
    let failedId: string;
    try {
      const first = SpecResponse.parse(await (await call(await jwt(), { prefetch: record })).json());
      failedId = decodeURIComponent(new URL(first.cards[0]!.links![0]!.url).pathname.split("/")[2]!);
      await until(async () => ((await t.server.store.getCase(failedId))?.status === "failed" ? true : undefined), 20_000, `case ${failedId} failed`);
    } finally {
      t.openai.clearFaults();
    }
    const second = SpecResponse.parse(await (await call(await jwt(), { prefetch: record })).json());
    expect(second.cards[0]!.summary).toMatch(/^medmmv started analysing this record/);
    const retryId = decodeURIComponent(new URL(second.cards[0]!.links![0]!.url).pathname.split("/")[2]!);
    expect(retryId).not.toBe(failedId);
    await until(async () => ((await t.server.store.getCase(retryId))?.status === "completed" ? true : undefined), 20_000, `case ${retryId} completed`);
    const third = SpecResponse.parse(await (await call(await jwt(), { prefetch: record })).json());
    expect(third.cards[0]!.summary).toMatch(/^medmmv: Inferior ST-elevation/);
  });

  it.each([
    ["a wrong aud", () => jwt({ aud: "https://elsewhere.example.org/cds-services/medmmv-diagnosis" })],
    ["an expired exp", () => jwt({ exp: Math.floor(Date.now() / 1000) - 3600 })],
    ["an unknown key", () => jwt({ key: strangerKey, kid: "stranger-1" })],
    ["a known kid with the wrong key", () => jwt({ key: strangerKey })],
    ["an issuer not configured", () => jwt({ iss: "https://other-ehr.example.org" })],
    ["no token at all", async () => null],
  ])("a JWT with %s → 401", async (_name, make) => {
    const res = await call(await make());
    expect(res.status).toBe(401);
    const body = await json<{ code: string }>(res);
    expect(body.code).toBe("UNAUTHORIZED");
  });

  it("a reused jti → 401", async () => {
    const token = await jwt({ jti: "once-only" });
    expect((await call(token)).status).toBe(200);
    const again = await call(token);
    expect(again.status).toBe(401);
    expect((await json<{ message: string }>(again)).message).toContain("jti");
  });

  it("a jti used on one server is refused by another server on the same store (workers, replicas)", async () => {
    // A second process on the same data directory, answering under the same public URL as an
    // EHR would see behind a load balancer; its own memory has never seen the token.
    const replica = await startTestServer({
      openai: t.openai,
      dataDir: t.dataDir,
      env: { MEDMMV_CDS_JWKS: path.join(dir, "ehr-jwks.json"), MEDMMV_CDS_ISSUERS: ISS, MEDMMV_PUBLIC_URL: t.base },
    });
    try {
      const token = await jwt({ jti: "replayed-across-processes" });
      const first = await call(token);
      expect(first.status).toBe(200);
      // Let the record's case finish first, so the replica's calls meet a settled record.
      const caseId = decodeURIComponent(new URL(SpecResponse.parse(await first.json()).cards[0]!.links![0]!.url).pathname.split("/")[2]!);
      await until(async () => ((await t.server.store.getCase(caseId))?.result ? true : undefined), 20_000, `case ${caseId} finished`);
      const replay = await call(token, {}, replica.base);
      expect(replay.status).toBe(401);
      expect((await json<{ message: string }>(replay)).message).toContain("jti replay");
      // A fresh token is accepted by the replica: the refusal was the replay, not the replica's setup.
      const fresh = await call(await jwt(), {}, replica.base);
      expect(fresh.status).toBe(200);
    } finally {
      await replica.close();
    }
  });

  it("an API key works too", async () => {
    const res = await call("test-key-alpha-0123456789abcdefghij");
    expect(res.status).toBe(200);
    SpecResponse.parse(await res.json());
  });

  it("missing prefetch is never fetched from a fhirServer not on the allow-list: without the Patient that is 412", async () => {
    const res = await call(await jwt(), { prefetch: undefined, fhirServer: unlisted.base, fhirAuthorization: { access_token: "secret-ehr-token", token_type: "Bearer", expires_in: 300, scope: "patient/*.read", subject: "medmmv" } });
    expect(res.status).toBe(412);
    const body = await json<{ code: string; message: string }>(res);
    expect(body.code).toBe("PRECONDITION_FAILED");
    expect(body.message).toMatch(/not one this service may contact \(MEDMMV_FHIR_SERVERS\)/);
    expect(unlisted.requests).toHaveLength(0);
  });

  it.each([
    ["no prefetch and no fhirServer", undefined, 412, /names no fhirServer/],
  ])("%s: %s, saying why", async (_name, p, status, why) => {
    const res = await call(await jwt(), { prefetch: p });
    expect(res.status).toBe(status);
    expect((await json<{ message: string }>(res)).message).toMatch(why);
  });

  it("…and is fetched, with the EHR's access token, from one on the list", async () => {
    const res = await call(await jwt(), { prefetch: { patient: prefetch().patient }, fhirServer: `${listed.base}/`, fhirAuthorization: { access_token: "ehr-token-123", token_type: "Bearer", expires_in: 300, scope: "patient/*.read", subject: "medmmv" } });
    expect(res.status).toBe(200);
    SpecResponse.parse(await res.json());
    expect(listed.requests.length).toBeGreaterThan(0);
    expect(listed.requests.every((r) => r.headers.authorization === "Bearer ehr-token-123")).toBe(true);
    expect(listed.requests.map((r) => r.url)).toContain("/fhir/Condition?patient=stemi-1&clinical-status=active");
  });

  it("a request that is not a CDS Hooks call is a 400 naming the field", async () => {
    const res = await send(`${t.base}${SERVICE}`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${await jwt()}` }, body: JSON.stringify({ hook: "order-sign", context: {} }) });
    expect(res.status).toBe(400);
    const body = await json<{ issues: Array<{ path: string }> }>(res);
    expect(body.issues.map((i) => i.path)).toEqual(expect.arrayContaining(["body.hook", "body.hookInstance", "body.context.userId"]));
  });

  it("a prefetch value that is not a FHIR resource is a 400 naming its key", async () => {
    const res = await call(await jwt(), { prefetch: { ...prefetch(), observations: "see chart" } });
    expect(res.status).toBe(400);
    expect((await json<{ issues: Array<{ path: string }> }>(res)).issues).toEqual([{ path: "body.prefetch.observations", message: "not a FHIR resource" }]);
  });

  it("an invalid prefetched resource is a 400 naming it in the prefetch", async () => {
    const p = prefetch() as { observations: { entry: Array<{ resource: Record<string, unknown> }> } };
    p.observations.entry[1]!.resource.status = "done";
    const res = await call(await jwt(), { prefetch: p });
    expect(res.status).toBe(400);
    expect((await json<{ issues: Array<{ path: string }> }>(res)).issues.map((i) => i.path)).toEqual(["body.prefetch.observations.entry[1].resource.status"]);
  });

  it("a prefetched Patient whose birthDate gives no valid age is a 422 naming it in the prefetch", async () => {
    const p = prefetch() as { patient: Record<string, unknown> };
    p.patient = { ...p.patient, birthDate: "1850-01-01" };
    const res = await call(await jwt(), { prefetch: p });
    expect(res.status).toBe(422);
    expect((await json<{ issues: Array<{ path: string }> }>(res)).issues.map((i) => i.path)).toEqual(["body.prefetch.patient.birthDate"]);
  });

  it("no patient data or tokens reach the logs", () => {
    const logs = t.logs.text();
    for (const canary of ["ehr-token-123", "secret-ehr-token", "Troponin", "150/95"]) expect(logs).not.toContain(canary);
  });

  it("a prefetched Patient that is not the patient in context is refused", async () => {
    const res = await call(await jwt(), { context: { userId: "Practitioner/dr-1", patientId: "someone-else" } });
    expect(res.status).toBe(400);
  });

  it("CORS answers the configured sandbox origin only", async () => {
    const pre = (origin: string) => send(`${t.base}${SERVICE}`, { method: "OPTIONS", headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": "authorization,content-type" } });
    const ok = await pre(SANDBOX);
    expect(ok.status).toBeLessThan(300);
    expect(ok.headers.get("access-control-allow-origin")).toBe(SANDBOX);
    const other = await pre("https://evil.example.org");
    expect(other.headers.get("access-control-allow-origin")).toBeNull();
  });
});

/**
 * The example hook request of CDS Hooks 2.0.1 (§Calling a CDS Service), as the specification prints it
 * (synthetic data). Its prefetch key `patientToGreet` is not one this service asks for.
 */
const SPEC_EXAMPLE_REQUEST = {
  hookInstance: "d1577c69-dfbe-44ad-ba6d-3e05e953b2ea",
  fhirServer: "http://hooks.smarthealthit.org:9080",
  hook: "patient-view",
  fhirAuthorization: { access_token: "some-opaque-fhir-access-token", token_type: "Bearer", expires_in: 300, scope: "patient/Patient.read patient/Observation.read", subject: "cds-service4" },
  context: { userId: "Practitioner/example", patientId: "1288992", encounterId: "89284" },
  prefetch: { patientToGreet: { resourceType: "Patient", gender: "male", birthDate: "1925-12-23", id: "1288992", active: true } },
};

const fhirAuthorization = { access_token: "ehr-token-456", token_type: "Bearer", expires_in: 300, scope: "patient/*.read", subject: "medmmv" };

describe("CDS Hooks 2.0.1 rules", () => {
  const raw = async (body: unknown, token: string | null, headers: Record<string, string> = {}) =>
    send(`${t.base}${SERVICE}`, { method: "POST", headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers }, body: JSON.stringify(body) });

  it.each([
    ["without its prefetch", (({ prefetch: _p, ...rest }) => rest)(SPEC_EXAMPLE_REQUEST)],
    ["as printed (a prefetch key this service never asked for)", SPEC_EXAMPLE_REQUEST],
  ])("the specification's example request %s, its FHIR server not reachable from here, is answered 412", async (_name, body) => {
    const res = await raw(body, await jwt());
    expect(res.status).toBe(412);
    expect((await json<{ code: string; message: string }>(res)).message).toMatch(/no Patient \(key "patient"\).*MEDMMV_FHIR_SERVERS/);
  });

  it("fhirAuthorization without the fhirServer it is for is a 400 naming fhirServer", async () => {
    const res = await raw({ hook: "patient-view", hookInstance: randomUUID(), fhirAuthorization, context: { userId: "Practitioner/dr-1", patientId: "stemi-1" }, prefetch: prefetch() }, await jwt());
    expect(res.status).toBe(400);
    expect((await json<{ issues: Array<{ path: string; message: string }> }>(res)).issues).toEqual([{ path: "body.fhirServer", message: "fhirServer is required when fhirAuthorization is sent" }]);
  });

  it("a hookInstance that is a GUID but not an RFC 4122 UUID (no variant bits) is accepted", async () => {
    const res = await call(await jwt(), { hookInstance: "d1577c69-dfbe-44ad-0a6d-3e05e953b2ea" });
    expect(res.status).toBe(200);
  });

  it("a null prefetch value means no data: it is not fetched, and the rest is", async () => {
    const before = listed.requests.length;
    const p = { ...prefetch(), conditions: null, observations: null, medicationStatements: undefined };
    const res = await call(await jwt(), { prefetch: p, fhirServer: listed.base, fhirAuthorization });
    expect(res.status).toBe(200);
    const asked = listed.requests.slice(before).map((r) => r.url!);
    expect(asked).toEqual(["/fhir/MedicationStatement?patient=stemi-1&status=active"]);
  });

  /** The observations prefetch as an EHR pages it: five glucose readings and a `next` link to the rest on `base`. */
  const pagedObservations = (base: string) => ({
    resourceType: "Bundle",
    type: "searchset",
    total: 11,
    link: [{ relation: "self", url: `${base}/Observation?patient=stemi-1` }, { relation: "next", url: `${base}/Observation?patient=stemi-1&_getpages=p2` }],
    entry: [1, 2, 3, 4, 5].map((i) => ({ resource: { resourceType: "Observation", id: `glu-${i}`, status: "final", code: { text: "Glucose" }, subject: { reference: "Patient/stemi-1" }, effectiveDateTime: `2026-11-2${i}`, valueQuantity: { value: 6 + i / 10, unit: "mmol/L" } } })),
  });

  it("a prefetch search with a next page: the rest is read from the allow-listed server with the EHR's token", async () => {
    const before = listed.requests.length;
    const res = await call(await jwt(), { prefetch: { ...prefetch(), observations: pagedObservations(listed.base) }, fhirServer: listed.base, fhirAuthorization });
    expect(res.status).toBe(200);
    const card = SpecResponse.parse(await res.json()).cards[0]!;
    expect(card.detail ?? "").not.toContain("Not read");
    const asked = listed.requests.slice(before);
    expect(asked.map((r) => r.url)).toEqual(["/fhir/Observation?patient=stemi-1&_getpages=p2"]);
    expect(asked[0]!.headers.authorization).toBe("Bearer ehr-token-456");
    const caseId = decodeURIComponent(new URL(card.links![0]!.url).pathname.split("/")[2]!);
    const stored = await until(async () => (await t.store.getCase(caseId)) ?? undefined, 20_000, "case");
    expect(stored.input.notes).toContain("Glucose 6.5 mmol/L");
    expect(stored.input.notes).toContain("Troponin I"); // from the next page
  });

  it("a report whose only content is a link to its text on the allow-listed server is read from there, with the EHR's token", async () => {
    const report = { resourceType: "DiagnosticReport", id: "rad-report", status: "final", code: { text: "CT chest" }, subject: { reference: "Patient/stemi-1" }, presentedForm: [{ contentType: "text/plain", url: `${listed.base}/Binary/rad-1` }] };
    const before = listed.requests.length;
    const p = prefetch() as Record<string, { entry: unknown[] }>;
    p.observations!.entry.push({ resource: report });
    const res = await call(await jwt(), { prefetch: p, fhirServer: listed.base, fhirAuthorization });
    expect(res.status).toBe(200);
    const asked = listed.requests.slice(before);
    expect(asked.map((r) => r.url)).toEqual(["/fhir/Binary/rad-1"]);
    expect(asked[0]!.headers.authorization).toBe("Bearer ehr-token-456");
    const card = SpecResponse.parse(await res.json()).cards[0]!;
    const caseId = decodeURIComponent(new URL(card.links![0]!.url).pathname.split("/")[2]!);
    const stored = await until(async () => (await t.store.getCase(caseId)) ?? undefined, 20_000, "case");
    expect(stored.input.notes).toContain("Small left pleural effusion");
  });

  it("…and where it cannot be read, the card says what was not", async () => {
    const res = await call(await jwt(), { prefetch: { ...prefetch(), observations: pagedObservations(unlisted.base) }, fhirServer: unlisted.base });
    expect(res.status).toBe(200);
    const card = SpecResponse.parse(await res.json()).cards[0]!;
    expect(card.indicator).toBe("warning");
    expect(card.detail).toContain("**Not read:** observations after the first 5 (the EHR sent a next page; its fhirServer is not one this service may contact (MEDMMV_FHIR_SERVERS))");
  });

  it("one failed prefetch query degrades the card, which says what was not read", async () => {
    const { conditions: _c, ...p } = prefetch();
    const res = await call(await jwt(), { prefetch: p, fhirServer: strict.base, fhirAuthorization });
    expect(res.status).toBe(200);
    const card = SpecResponse.parse(await res.json()).cards[0]!;
    expect(card.indicator).toBe("warning");
    expect(card.summary).toMatch(/part of it could not be read/);
    expect(card.detail).toContain("**Not read:** conditions — active problems (the FHIR server answered 401 (the fhirAuthorization token was refused))");
  });

  it("…but a Patient that cannot be fetched is 412", async () => {
    const { patient: _p, ...p } = prefetch();
    const res = await call(await jwt(), { prefetch: p, fhirServer: noPatients.base, fhirAuthorization });
    expect(res.status).toBe(412);
    expect((await json<{ message: string }>(res)).message).toMatch(/no Patient .*answered 401/);
  });

  it("an API-key call may have prefetch fetched only with the EHR's fhirAuthorization: 403 naming it, and nothing fetched", async () => {
    const before = listed.requests.length;
    const res = await call(KEY_A, { prefetch: undefined, fhirServer: listed.base, context: { userId: "Practitioner/dr-1", patientId: "victim-42" } });
    expect(res.status).toBe(403);
    const body = await json<{ code: string; message: string }>(res);
    expect(body.code).toBe("FORBIDDEN");
    expect(body.message).toContain("fhirAuthorization");
    expect(listed.requests.length).toBe(before);
    // With the EHR's token the same caller may.
    const ok = await call(KEY_A, { prefetch: { patient: prefetch().patient }, fhirServer: listed.base, fhirAuthorization });
    expect(ok.status).toBe(200);
    expect(listed.requests.length).toBeGreaterThan(before);
  });

  it("the JWT audience is the configured public URL, never the request's Host", async () => {
    const elsewhere = "https://other-service.example.org";
    const res = await call(await jwt({ aud: `${elsewhere}${SERVICE}` }), {}, t.base);
    expect(res.status).toBe(401);
    const spoofed = await raw({ hook: "patient-view", hookInstance: randomUUID(), context: { userId: "Practitioner/dr-1", patientId: "stemi-1" }, prefetch: prefetch() }, await jwt({ aud: `${elsewhere}${SERVICE}` }), { host: "other-service.example.org" });
    expect(spoofed.status).toBe(401);
  });

  it("a server with the EHR's JWKS and no MEDMMV_PUBLIC_URL does not start: the audience would be whatever Host the caller sends", async () => {
    await expect(startTestServer({ openai: t.openai, dataDir: t.dataDir, env: { MEDMMV_CDS_JWKS: path.join(dir, "ehr-jwks.json"), MEDMMV_CDS_ISSUERS: ISS } })).rejects.toThrow(/MEDMMV_PUBLIC_URL/);
  });

  it.each([
    ["an exp ten years ahead", () => jwt({ exp: Math.floor(Date.now() / 1000) + 10 * 365 * 86_400 }), /exp is more than 300 s ahead/],
    ["an empty jti", () => jwt({ jti: "" }), /jti/],
    ["an iat in the future", () => jwt({ iat: Math.floor(Date.now() / 1000) + 3600 }), /iat is in the future/],
  ])("a JWT with %s → 401", async (_name, make, why) => {
    const res = await call(await make());
    expect(res.status).toBe(401);
    expect((await json<{ message: string }>(res)).message).toMatch(why);
  });

  it("the EHR reads the FHIR result of a case it made through the hook, with a JWT of its own; nobody else can", async () => {
    const { allergies: _a, medicationRequests: _m, ...record } = prefetch(); // a record no other test sends
    const first = SpecResponse.parse(await (await call(await jwt(), { prefetch: { ...record, allergies: null, medicationRequests: null } })).json());
    const caseId = decodeURIComponent(new URL(first.cards[0]!.links![0]!.url).pathname.split("/")[2]!);
    await until(async () => ((await t.server.store.getCase(caseId))?.result ? true : undefined), 20_000, `case ${caseId} finished`);
    const url = `/cases/${encodeURIComponent(caseId)}/fhir`;
    const read = (token: string) => t.api(url, { key: null, headers: { authorization: `Bearer ${token}`, accept: "application/fhir+json" } });

    const res = await read(await jwt({ aud: `${PUBLIC_URL}${url}` }));
    expect(res.status).toBe(200);
    expect(await json<{ resourceType: string; entry: Array<{ resource: { resourceType: string } }> }>(res)).toMatchObject({ resourceType: "Bundle", entry: expect.arrayContaining([expect.objectContaining({ resource: expect.objectContaining({ resourceType: "ClinicalImpression" }) })]) });
    // The audience is the URL read, as for the hook: a token for the hook endpoint is not one for this.
    expect((await read(await jwt({ aud: `${PUBLIC_URL}${SERVICE}` }))).status).toBe(401);
    expect((await read(await jwt({ aud: `${PUBLIC_URL}${url}`, key: strangerKey, kid: "stranger-1" }))).status).toBe(401);
    // An API key's holder did not make the case: not found for it.
    expect((await t.api(url, { headers: { accept: "application/fhir+json" } })).status).toBe(404);
  });

  it("a JWT with an iat a few seconds ahead (clock skew) is accepted", async () => {
    const res = await call(await jwt({ iat: Math.floor(Date.now() / 1000) + 10 }));
    expect(res.status).toBe(200);
  });
});

describe("CDS Hooks with the EHR's JWKS at a URL", () => {
  it("verifies JWTs with keys fetched from MEDMMV_CDS_JWKS", async () => {
    let fetched = 0;
    const keys = createServer((_req, res) => {
      fetched++;
      res.writeHead(200, { "content-type": "application/json" }).end(ehrJwks);
    });
    await new Promise<void>((r) => keys.listen(0, "127.0.0.1", r));
    // Behind a proxy, as in production: the EHR calls the public URL, the request reaches the port.
    const remote = await startTestServer({ env: { MEDMMV_CDS_JWKS: `http://127.0.0.1:${(keys.address() as AddressInfo).port}/.well-known/jwks.json`, MEDMMV_CDS_ISSUERS: ISS, MEDMMV_PUBLIC_URL: "https://medmmv.example.org" } });
    try {
      const res = await call(await jwt({ aud: `https://medmmv.example.org${SERVICE}` }), {}, remote.base);
      expect(res.status).toBe(200);
      SpecResponse.parse(await res.json());
      expect(fetched).toBeGreaterThan(0);
    } finally {
      await remote.close();
      await new Promise((r) => keys.close(r));
    }
  });
});

describe("CDS Hooks under a rate limit", () => {
  it("refused credentials are counted: past the limit a bad token gets 429", async () => {
    const limited = await startTestServer({ openai: t.openai, env: { MEDMMV_CDS_JWKS: path.join(dir, "ehr-jwks.json"), MEDMMV_CDS_ISSUERS: ISS, MEDMMV_PUBLIC_URL: PUBLIC_URL, MEDMMV_AUTH_FAILURES_PER_MIN: "3" } });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) statuses.push((await call(await jwt({ key: strangerKey }), {}, limited.base)).status);
      expect(statuses).toEqual([401, 401, 401, 429]);
    } finally {
      await limited.close();
    }
  });
});

describe("CDS Hooks without configuration", () => {
  it("sends no CORS headers and takes API keys only", async () => {
    const plain = await startTestServer();
    try {
      const res = await fetch(`${plain.base}/cds-services`, { headers: { origin: SANDBOX } });
      expect(res.status).toBe(200);
      expect(res.headers.get("access-control-allow-origin")).toBeNull();
      const anon = await fetch(`${plain.base}${SERVICE}`, { method: "POST", headers: { "content-type": "application/json", authorization: "Bearer a.b.c" }, body: "{}" });
      expect(anon.status).toBe(401);
    } finally {
      await plain.close();
    }
  });
});
