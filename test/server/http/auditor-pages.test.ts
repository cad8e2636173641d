/**
 * What auditors and EHRs see and say, end to end through the app: the auditor pages (a link
 * from POST /audit-links, no key in the browser), the search's refusal of unknown filters, the
 * trail's record of a search, and CDS Hooks feedback (2.0.1) from an EHR's JWT to the case's
 * trail, its audit view, the auditor pages, /metrics and GET /cases?feedback=.
 */
import { createHash, randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import { stemiPrefetch } from "../cds-hooks/stemi-prefetch.js";
import { chestPain, VIEW_ENV } from "./http-harness.js";
import { startInjectServer, type InjectServer } from "./inject-harness.js";

const KEYS = {
  drA: "clinic-key-doctor-a-0123456789abcdef",
  auditor: "clinic-key-auditor-0123456789abcdef",
};
const sha = (k: string) => createHash("sha256").update(k).digest("hex");
const ISS = "https://ehr.example.org";
const PUBLIC_URL = "http://inject.invalid:8080";
const SERVICE = "/cds-services/medmmv-diagnosis";
const METRICS_TOKEN = "metrics-token-0123456789abcdef0123";

let t: InjectServer;
let dir: string;
let ehrKey: CryptoKey;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "medmmv-auditor-"));
  const ehr = await generateKeyPair("ES384");
  ehrKey = ehr.privateKey;
  await writeFile(join(dir, "jwks.json"), JSON.stringify({ keys: [{ ...(await exportJWK(ehr.publicKey)), kid: "ehr-1", alg: "ES384", use: "sig" }] }));
  await writeFile(join(dir, "issuers.json"), JSON.stringify([{ iss: ISS, jwks: join(dir, "jwks.json"), tenant: "clinic" }]));
  await writeFile(
    join(dir, "keys.json"),
    JSON.stringify([
      { id: "dr-a", sha256: sha(KEYS.drA), tenant: "clinic", roles: ["clinician"] },
      { id: "qa-1", sha256: sha(KEYS.auditor), tenant: "clinic", roles: ["auditor"] },
    ]),
  );
  t = await startInjectServer({
    scenario: clinicalScenario({ rolloutAnswers: ["Inferior ST-elevation myocardial infarction"] }),
    env: { ...VIEW_ENV, MEDMMV_API_KEYS: "", MEDMMV_API_KEYS_FILE: join(dir, "keys.json"), MEDMMV_CDS_ISSUERS_FILE: join(dir, "issuers.json"), MEDMMV_PUBLIC_URL: PUBLIC_URL, MEDMMV_METRICS_TOKEN: METRICS_TOKEN },
  });
});
afterAll(async () => {
  await t?.close();
  await rm(dir, { recursive: true, force: true });
});

const jwt = (aud: string) =>
  new SignJWT({ sub: "Practitioner/dr-1" })
    .setProtectedHeader({ alg: "ES384", kid: "ehr-1", typ: "JWT" })
    .setIssuer(ISS)
    .setAudience(`${PUBLIC_URL}${aud}`)
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + 300)
    .setJti(randomUUID())
    .sign(ehrKey);

type Card = { uuid?: string; indicator: string; summary: string; overrideReasons?: Array<{ code: string; system: string; display: string }>; links: Array<{ url: string }> };
async function hook(): Promise<Card> {
  const body = { hook: "patient-view", hookInstance: randomUUID(), context: { userId: "Practitioner/dr-1", patientId: "stemi-1" }, prefetch: stemiPrefetch() };
  const r = await t.request({ method: "POST", url: SERVICE, json: body, key: null, headers: { authorization: `Bearer ${await jwt(SERVICE)}` } });
  expect(r.status, r.text).toBe(200);
  return (r.body as { cards: Card[] }).cards[0]!;
}

async function auditorLink(): Promise<string> {
  const r = await t.request({ method: "POST", url: "/audit-links", json: {}, key: KEYS.auditor });
  expect(r.status, r.text).toBe(201);
  return (r.body as { url: string }).url;
}
const withQuery = (url: string, q: string) => `${url}${url.includes("?") ? "&" : "?"}${q}`;
const today = () => new Date().toISOString().slice(0, 10);

describe("the case search", () => {
  it("refuses a filter it does not know (400 naming the accepted ones), and the trail records a search's filters and the cases it listed", async () => {
    const id = ((await t.request({ method: "POST", url: "/diagnose", json: chestPain(), key: KEYS.drA })).body as { caseId: string }).caseId;
    const typo = await t.request({ url: "/cases?submitedBy=dr-a", key: KEYS.auditor });
    expect(typo.status).toBe(400);
    expect((typo.body as { message: string }).message).toMatch(/unknown filter "submitedBy"; the accepted ones are .*submittedBy/);
    const found = await t.request({ url: "/cases?submittedBy=dr-a&filteredOrRefused=false", key: KEYS.auditor });
    expect((found.body as { items: Array<{ caseId: string; filteredOrRefused: boolean }> }).items).toContainEqual(expect.objectContaining({ caseId: id, filteredOrRefused: false }));
    const search = (await t.store.listAccess({ tenant: "clinic", action: "search", actorId: "qa-1", limit: 100 })).items.filter((e) => e.outcome === "success").at(-1)!;
    expect(search.detail).toMatchObject({ filters: "submittedBy=dr-a filteredOrRefused=false", caseIds: expect.stringContaining(id) });
  });
});

describe("an auditor in a browser, with a link and no key", () => {
  it("finds a clinician's case by date, reads its trail as a table, and exports the day's trail as CSV and FHIR NDJSON", async () => {
    const id = ((await t.request({ method: "POST", url: "/diagnose", json: chestPain(), key: KEYS.drA })).body as { caseId: string }).caseId;
    const link = await auditorLink();
    expect(link).not.toContain(KEYS.auditor);

    const cases = await t.request({ url: withQuery(link, `from=${today()}&submittedBy=&status=`), key: null });
    expect(cases.status, cases.text).toBe(200);
    expect(cases.headers.get("content-type")).toMatch(/text\/html/);
    expect(cases.headers.get("content-security-policy")).toMatch(/script-src 'none'.*form-action 'self'/);
    expect(cases.text).toContain(`>${id}</a>`);

    const caseHref = cases.text.match(new RegExp(`href="(/audit/cases/${id}\\?token=[^"]+)"`))![1]!.replace(/&#38;/g, "&");
    const trail = await t.request({ url: caseHref, key: null });
    expect(trail.status, trail.text).toBe(200);
    const rows = [...trail.text.matchAll(/<tr><td>([^<]+)<\/td><td>([^<]+)<\/td><td>([^<]+)<\/td>/g)].map((m) => [m[2], m[3]]);
    expect(rows[0]).toEqual(["key dr-a", "submitted the case"]);
    expect(trail.text).toContain("Submitted by dr-a");
    // Its audit view through a view link the auditor's page made: the trail names the link and the auditor.
    const viewHref = trail.text.match(/href="(\/cases\/[^"]+\/view\?token=[^"]+)"/)![1]!.replace(/&#38;/g, "&");
    expect((await t.request({ url: viewHref, key: null })).status).toBe(200);
    const opened = (await t.store.listAccess({ tenant: "clinic", caseId: id, action: "view", limit: 10 })).items.at(-1)!;
    expect(opened.actor).toMatchObject({ type: "link", sub: "qa-1" });
    expect(opened.client).toBeTruthy();

    const page = await t.request({ url: withQuery(link.replace("/audit?", "/audit/trail?"), `day=${today()}`), key: null });
    expect(page.status, page.text).toBe(200);
    const csvHref = page.text.match(/href="(\/audit\/trail\.csv\?[^"]+)"/)![1]!.replace(/&#38;/g, "&");
    const csv = await t.request({ url: csvHref, key: null });
    expect(csv.status).toBe(200);
    expect(csv.headers.get("content-type")).toMatch(/text\/csv/);
    expect(csv.headers.get("content-disposition")).toContain(`medmmv-trail-${today()}.csv`);
    const lines = csv.text.trim().split("\r\n");
    expect(lines[0]).toBe("when,who,what,case,from,outcome,request id");
    expect(lines.some((l) => l.includes(`key dr-a,submitted the case,${id}`))).toBe(true);
    const ndjson = await t.request({ url: csvHref.replace("trail.csv", "trail.ndjson"), key: null });
    const events = ndjson.text.trim().split("\n").map((l) => JSON.parse(l) as { resourceType: string });
    // The same day's events, and one more: the CSV export, itself an access in the trail.
    expect(events.length).toBe(lines.length - 1 + 1);
    expect(events.every((e) => e.resourceType === "AuditEvent")).toBe(true);
    // No case content on any of it.
    for (const text of [cases.text, trail.text, csv.text, ndjson.text]) expect(text).not.toContain("crushing");
  });

  it("refuses an unknown filter with a page naming the accepted ones; a clinician gets no auditor link; a forged link is refused", async () => {
    const link = await auditorLink();
    const bad = await t.request({ url: withQuery(link, "submitedBy=dr-a"), key: null });
    expect(bad.status).toBe(400);
    expect(bad.text).toMatch(/unknown filter &#34;submitedBy&#34;; the accepted ones are .*submittedBy/);
    expect((await t.request({ method: "POST", url: "/audit-links", json: {}, key: KEYS.drA })).status).toBe(403);
    expect((await t.request({ url: "/audit?token=forged.token", key: null })).status).toBe(401);
    // A view link is not an auditor link.
    const id = ((await t.request({ method: "POST", url: "/diagnose", json: chestPain(), key: KEYS.drA })).body as { caseId: string }).caseId;
    const view = (await t.request({ method: "POST", url: `/cases/${id}/view-links`, json: {}, key: KEYS.drA })).body as { url: string };
    const viewToken = new URL(view.url, PUBLIC_URL).searchParams.get("token")!;
    expect((await t.request({ url: `/audit?token=${encodeURIComponent(viewToken)}`, key: null })).status).toBe(401);
  });
});

describe("CDS Hooks feedback", () => {
  it("an EHR's override of a card shows in the case's trail, its audit view, the auditor page, /metrics and the search", async () => {
    const started = await hook();
    const caseId = new URL(started.links[0]!.url).pathname.split("/")[2]!;
    await t.service.wait(caseId);
    const card = await hook();
    expect(card.uuid).toBe(caseId.replace(/^case-/, ""));
    const reason = card.overrideReasons!.find((r) => r.code === "disagree-diagnosis")!;

    const feedback = { feedback: [{ card: card.uuid, outcome: "overridden", overrideReason: { reason, userComment: "patient John Doe prefers to wait" }, outcomeTimestamp: new Date().toISOString() }] };
    const posted = await t.request({ method: "POST", url: `${SERVICE}/feedback`, json: feedback, key: null, headers: { authorization: `Bearer ${await jwt(`${SERVICE}/feedback`)}` } });
    expect(posted.status, posted.text).toBe(200);
    // The hook's own audience is not the feedback endpoint's.
    const wrongAud = await t.request({ method: "POST", url: `${SERVICE}/feedback`, json: feedback, key: null, headers: { authorization: `Bearer ${await jwt(SERVICE)}` } });
    expect(wrongAud.status).toBe(401);
    // 2.0.1: no overrideReason on an accepted card; a card of no case is 404.
    const accepted = { feedback: [{ card: card.uuid, outcome: "accepted", overrideReason: { reason }, outcomeTimestamp: new Date().toISOString() }] };
    expect((await t.request({ method: "POST", url: `${SERVICE}/feedback`, json: accepted, key: null, headers: { authorization: `Bearer ${await jwt(`${SERVICE}/feedback`)}` } })).status).toBe(400);
    const stranger = { feedback: [{ card: randomUUID(), outcome: "accepted", outcomeTimestamp: new Date().toISOString() }] };
    expect((await t.request({ method: "POST", url: `${SERVICE}/feedback`, json: stranger, key: null, headers: { authorization: `Bearer ${await jwt(`${SERVICE}/feedback`)}` } })).status).toBe(404);

    const trail = (await t.store.listAccess({ tenant: "clinic", caseId, action: "feedback", limit: 10 })).items.filter((e) => e.outcome === "success");
    expect(trail).toHaveLength(1);
    expect(trail[0]!.actor).toMatchObject({ type: "ehr", id: ISS, sub: "Practitioner/dr-1" });
    expect(trail[0]!.detail).toMatchObject({ outcome: "overridden", reason: "Disagree with the suggested diagnosis", indicator: card.indicator });
    expect(JSON.stringify(trail[0]!.detail)).not.toContain("John Doe");

    const view = await t.request({ url: `/cases/${caseId}/view`, key: KEYS.auditor });
    expect(view.text).toContain("overridden: Disagree with the suggested diagnosis");
    // The auditor's view lists who accessed the case; a clinician's view of a case does not carry the trail.
    expect(view.text).toContain('"what":"sent CDS card feedback: overridden: Disagree with the suggested diagnosis"');
    const mine = ((await t.request({ method: "POST", url: "/diagnose", json: chestPain(), key: KEYS.drA })).body as { caseId: string }).caseId;
    const clinicianView = await t.request({ url: `/cases/${mine}/view`, key: KEYS.drA });
    expect(clinicianView.status).toBe(200);
    expect(clinicianView.text).not.toContain('"trail":');
    const page = await t.request({ url: withQuery(await auditorLink(), "").replace("/audit?", `/audit/cases/${caseId}?`), key: null });
    expect(page.text).toContain("overridden: Disagree with the suggested diagnosis");

    const search = await t.request({ url: "/cases?feedback=overridden", key: KEYS.auditor });
    expect((search.body as { items: Array<{ caseId: string; feedback: string }> }).items).toEqual([expect.objectContaining({ caseId, feedback: "overridden" })]);

    const metrics = await t.request({ url: "/metrics", key: METRICS_TOKEN });
    expect(metrics.text).toContain(`medmmv_cds_card_feedback_total{outcome="overridden",indicator="${card.indicator}"} 1`);
  });
});
