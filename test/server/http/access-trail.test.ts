import { createHash } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { flattenAttributes } from "../../../src/core/evidence/graph-formats.js";
import { verifyAccessTrail } from "../../../src/server/store/verify-access-trail.js";
import { viewLinkId } from "../../../src/server/http/auth.js";
import { RetentionSweeper } from "../../../src/server/service/retention.js";
import { createLogger } from "../../../src/server/http/logger.js";
import { readWithNetworkx } from "../../support/networkx-graphml.js";
import { medmmvCli } from "../../support/medmmv-cli.js";
import { chestPain, LogCapture, VIEW_ENV } from "./http-harness.js";
import { startInjectServer, type InjectServer } from "./inject-harness.js";

/**
 * Teams, roles and the access trail, end to end through the app: one tenant with two
 * clinicians and an auditor (and an admin, and a clinician of another tenant), the keys in
 * MEDMMV_API_KEYS_FILE as digests.
 */
const KEYS = {
  drA: "clinic-key-doctor-a-0123456789abcdef",
  drB: "clinic-key-doctor-b-0123456789abcdef",
  auditor: "clinic-key-auditor-0123456789abcdef",
  admin: "clinic-key-admin-00-0123456789abcdef",
  other: "other-clinic-doctor-0123456789abcdef",
};
const sha = (k: string) => createHash("sha256").update(k).digest("hex");
const FILE = [
  { id: "dr-a", sha256: sha(KEYS.drA), tenant: "clinic", roles: ["clinician"] },
  { id: "dr-b", sha256: sha(KEYS.drB), tenant: "clinic", roles: ["clinician"] },
  { id: "qa-1", sha256: sha(KEYS.auditor), tenant: "clinic", roles: ["auditor"] },
  { id: "boss", sha256: sha(KEYS.admin), tenant: "clinic", roles: ["admin"] },
  { id: "dr-x", sha256: sha(KEYS.other), tenant: "elsewhere", roles: ["clinician"] },
];

let t: InjectServer;
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "medmmv-teams-"));
  await writeFile(join(dir, "keys.json"), JSON.stringify(FILE));
  t = await startInjectServer({ env: { ...VIEW_ENV, MEDMMV_API_KEYS: "", MEDMMV_API_KEYS_FILE: join(dir, "keys.json") } });
});
afterAll(async () => {
  await t?.close();
  await rm(dir, { recursive: true, force: true });
});

type Bundle = { resourceType: string; type: string; entry: Array<{ resource: Record<string, any> }>; link: Array<{ relation: string; url: string }> };
const actionOf = (r: Record<string, any>) => (r.subtype as Array<{ system: string; code: string }>).find((c) => c.system === "urn:medmmv:access-action")!.code;
const actorOf = (r: Record<string, any>) => r.agent[0].who.identifier.value as string;
const caseOf = (r: Record<string, any>) => (r.entity as Array<any> | undefined)?.find((e) => e.what?.identifier?.system === "urn:medmmv:case")?.what.identifier.value ?? null;

async function trail(key = KEYS.auditor, query = ""): Promise<Bundle> {
  const r = await t.request({ url: `/audit-events${query}`, key });
  expect(r.status, r.text).toBe(200);
  expect(r.headers.get("content-type")).toMatch(/application\/fhir\+json/);
  return r.body as Bundle;
}

describe("one tenant, two clinicians and an auditor", () => {
  it("records exactly the accesses, in order, with actors and outcomes, and no case text", async () => {
    const before = (await trail()).entry.length; // earlier reads of the trail are in it too
    const created = await t.request({ method: "POST", url: "/diagnose", json: chestPain(), key: KEYS.drA });
    expect(created.status, created.text).toBe(201);
    const id = (created.body as { caseId: string }).caseId;

    const search = await t.request({ url: "/cases", key: KEYS.auditor });
    expect((search.body as { items: Array<{ caseId: string; submittedBy: string }> }).items).toEqual([expect.objectContaining({ caseId: id, submittedBy: "dr-a" })]);
    expect((await t.request({ url: `/cases/${id}`, key: KEYS.auditor })).status).toBe(200);
    const graphml = await t.request({ url: `/cases/${id}/evidence-graph?format=graphml&scope=full`, key: KEYS.auditor });
    expect(graphml.status).toBe(200);
    expect(graphml.headers.get("content-type")).toMatch(/application\/graphml\+xml/);
    expect((await t.request({ url: `/cases/${id}/fhir`, key: KEYS.auditor })).status).toBe(200);
    const view = await t.request({ url: `/cases/${id}/view`, key: KEYS.auditor });
    expect(view.status).toBe(200);
    expect(view.headers.get("content-type")).toMatch(/text\/html/);

    // Clinician B: the same answer as for a case that does not exist.
    const other = await t.request({ url: `/cases/${id}`, key: KEYS.drB });
    const missing = await t.request({ url: "/cases/no-such-case", key: KEYS.drB });
    expect([other.status, (other.body as { code: string }).code]).toEqual([missing.status, (missing.body as { code: string }).code]);
    expect(other.status).toBe(404);

    expect((await t.request({ method: "DELETE", url: `/cases/${id}`, key: KEYS.drA })).status).toBe(204);

    const events = (await trail()).entry.slice(before + 1).map((e) => e.resource);
    const caseEvents = events.filter((r) => actionOf(r) !== "audit-read" || caseOf(r) !== null);
    // B's read of the missing case comes after B's read of A's case; the list is everything since.
    expect(caseEvents.map((r) => [actionOf(r), actorOf(r), caseOf(r), r.outcome])).toEqual([
      ["create", "dr-a", id, "0"],
      ["search", "qa-1", null, "0"],
      ["read", "qa-1", id, "0"],
      ["export", "qa-1", id, "0"],
      ["fhir", "qa-1", id, "0"],
      ["view", "qa-1", id, "0"],
      // the page opened with the key embeds a link of its own (6 h): its issuance is an access too
      ["view-link", "qa-1", id, "0"],
      ["read", "dr-b", id, "4"],
      ["read", "dr-b", "no-such-case", "4"],
      ["delete", "dr-a", id, "0"],
    ]);
    for (const r of events) {
      expect(r).toMatchObject({ resourceType: "AuditEvent", type: { system: "http://terminology.hl7.org/CodeSystem/audit-event-type", code: "rest" }, source: { observer: { display: "medmmv" } } });
      expect(r.meta.profile[0]).toMatch(/^https:\/\/profiles\.ihe\.net\/ITI\/BALP\/StructureDefinition\/IHE\.BasicAudit\./);
      expect(r.agent.some((a: any) => a.network?.address)).toBe(true);
    }
    const text = JSON.stringify(events);
    for (const content of [chestPain().notes!, "crushing", "substernal", "Inferior ST-elevation", "myocardial", "diaphoretic"]) expect(text).not.toContain(content);

    // A deleted case's trail stays, readable by the case.
    const byCase = await t.request({ url: `/cases/${id}/audit-events`, key: KEYS.auditor });
    expect((byCase.body as Bundle).entry.map((e) => actionOf(e.resource))).toEqual(["create", "read", "export", "fhir", "view", "view-link", "read", "delete"]);
    expect((await verifyAccessTrail(t.store)).ok).toBe(true);
  });

  it("an auditor may not submit or delete (403 naming the role); a clinician may not read the trail", async () => {
    const post = await t.request({ method: "POST", url: "/diagnose", json: chestPain(), key: KEYS.auditor });
    expect(post.status).toBe(403);
    expect((post.body as { message: string }).message).toMatch(/clinician/);
    // A bad body does not change the answer: the role is checked before the body is read.
    expect((await t.request({ method: "POST", url: "/diagnose", payload: "{", headers: { "content-type": "application/json" }, key: KEYS.auditor })).status).toBe(403);
    const created = await t.request({ method: "POST", url: "/diagnose", json: chestPain(), key: KEYS.drA });
    const id = (created.body as { caseId: string }).caseId;
    const del = await t.request({ method: "DELETE", url: `/cases/${id}`, key: KEYS.auditor });
    expect(del.status).toBe(403);
    expect((del.body as { message: string }).message).toMatch(/clinician, admin/);
    const read = await t.request({ url: "/audit-events", key: KEYS.drA });
    expect(read.status).toBe(403);
    expect((read.body as { message: string }).message).toMatch(/auditor, admin/);
    // One refusal, one event.
    expect((await trail(KEYS.auditor, "?actor=dr-a&action=audit-read")).entry.map((e) => e.resource.outcome)).toEqual(["4"]);
    const refusals = (await trail(KEYS.auditor, "?action=delete")).entry.map((e) => [actorOf(e.resource), e.resource.outcome]);
    expect(refusals).toContainEqual(["qa-1", "4"]);
    // Clinician B's view of A's case: the same 401, word for word, as a case that does not exist.
    const bView = await t.request({ url: `/cases/${id}/view`, key: KEYS.drB });
    const missingView = await t.request({ url: "/cases/no-such-case/view", key: KEYS.drB });
    expect([bView.status, missingView.status]).toEqual([401, 401]);
    const message = (html: string) => html.replace(/nonce-[^'"]+|nonce="[^"]+"/g, "");
    expect(message(bView.text)).toBe(message(missingView.text));
    // An admin deletes another's case of its tenant; another tenant's clinician does not see it.
    expect((await t.request({ url: `/cases/${id}`, key: KEYS.other })).status).toBe(404);
    expect((await t.request({ method: "DELETE", url: `/cases/${id}`, key: KEYS.admin })).status).toBe(204);
  });

  it("a clinician's search returns only its own cases; an auditor's the tenant's, filtered", async () => {
    const mine = (await t.request({ method: "POST", url: "/diagnose", json: chestPain(), key: KEYS.drA })).body as { caseId: string };
    const theirs = (await t.request({ method: "POST", url: "/diagnose", json: chestPain(), key: KEYS.drB })).body as { caseId: string };
    const ids = async (key: string, q = "") => ((await t.request({ url: `/cases${q}`, key })).body as { items: Array<{ caseId: string }> }).items.map((i) => i.caseId);
    expect(await ids(KEYS.drA)).toEqual([mine.caseId]);
    expect(await ids(KEYS.drB)).toEqual([theirs.caseId]);
    expect(await ids(KEYS.auditor)).toEqual([theirs.caseId, mine.caseId]);
    expect(await ids(KEYS.auditor, "?submittedBy=dr-a")).toEqual([mine.caseId]);
    expect(await ids(KEYS.auditor, "?abstained=true")).toEqual([]);
    expect(await ids(KEYS.other)).toEqual([]);
    const row = ((await t.request({ url: "/cases?limit=1", key: KEYS.auditor })).body as { items: Array<Record<string, unknown>>; nextCursor: string }).items[0]!;
    expect(row).toMatchObject({ status: "completed", abstained: false, submittedBy: "dr-b", models: expect.any(Array) });
    expect(JSON.stringify(row)).not.toContain("crushing");
    expect((await t.request({ url: "/cases?from=yesterday", key: KEYS.auditor })).status).toBe(400);
  });

  it("the GraphML export, read by networkx, has the JSON graph's nodes, edges and attributes", async () => {
    const id = ((await t.request({ method: "POST", url: "/diagnose", json: chestPain(), key: KEYS.drA })).body as { caseId: string }).caseId;
    const graph = (await t.request({ url: `/cases/${id}/evidence-graph?scope=full&format=json`, key: KEYS.auditor })).body as { nodes: Array<{ key: string; attributes: Record<string, unknown> }>; edges: Array<{ key: string; source: string; target: string; attributes: Record<string, unknown> }> };
    expect(graph.nodes.length).toBeGreaterThan(0);
    const xml = (await t.request({ url: `/cases/${id}/evidence-graph?scope=full&format=graphml`, key: KEYS.auditor })).text;
    const read = await readWithNetworkx(xml);
    expect(Object.keys(read.nodes).sort()).toEqual(graph.nodes.map((n) => n.key).sort());
    for (const n of graph.nodes) expect(read.nodes[n.key]).toEqual(flattenAttributes(n.attributes));
    expect(read.edges.length).toBe(graph.edges.length);
    for (const e of graph.edges) expect(read.edges).toContainEqual([e.source, e.target, e.key, flattenAttributes(e.attributes)]);
    const gexf = await t.request({ url: `/cases/${id}/evidence-graph?scope=full&format=gexf`, key: KEYS.auditor });
    expect(gexf.headers.get("content-type")).toMatch(/application\/gexf\+xml/);
    expect(gexf.text).toContain("<gexf");

    // The audit view offers the same files, under its own signed-link token (a download sends no key).
    const page = (await t.request({ url: `/cases/${id}/view`, key: KEYS.auditor })).text;
    const urls = [...page.matchAll(/"url":"(\/cases\/[^"]+\/view\/evidence-graph\?[^"]+)"/g)].map((m) => JSON.parse(`"${m[1]}"`) as string);
    expect(urls.map((u) => new URL(u, "http://x").searchParams.get("format"))).toEqual(["graphml", "gexf", "json"]);
    const fromPage = await t.request({ url: urls[0]!, key: null });
    expect(fromPage.status).toBe(200);
    expect(fromPage.text).toBe(xml);
    expect((await t.request({ url: urls[0]!.replace(/token=[^&]+/, "token=forged"), key: null })).status).toBe(401);
  });
});

describe("a page opened with a key", () => {
  it("records the issuance of the link token it embeds, named as the trail names the link when it is used", async () => {
    const id = ((await t.request({ method: "POST", url: "/diagnose", json: chestPain(), key: KEYS.drA })).body as { caseId: string }).caseId;
    const page = (await t.request({ url: `/cases/${id}/view`, key: KEYS.auditor })).text;
    const url = [...page.matchAll(/"url":"(\/cases\/[^"]+\/view\/evidence-graph\?[^"]+)"/g)].map((m) => JSON.parse(`"${m[1]}"`) as string)[0]!;
    const token = new URL(url, "http://x").searchParams.get("token")!;
    const issued = (await t.store.listAccess({ tenant: "clinic", caseId: id, action: "view-link", limit: 10 })).items;
    expect(issued).toEqual([expect.objectContaining({ actor: expect.objectContaining({ id: "qa-1" }), outcome: "success", detail: { linkId: viewLinkId(token), ttlSec: 6 * 3600, via: "view-page" } })]);
    expect((await t.request({ url, key: null })).status).toBe(200);
    const used = (await t.store.listAccess({ tenant: "clinic", caseId: id, action: "export", limit: 10 })).items.at(-1);
    expect(used?.actor).toMatchObject({ type: "link", id: viewLinkId(token) });
  });
});

describe("the trail is part of the request", () => {
  it("a read whose event cannot be written fails with 503 and serves nothing", async () => {
    const id = ((await t.request({ method: "POST", url: "/diagnose", json: chestPain(), key: KEYS.drA })).body as { caseId: string }).caseId;
    const append = t.store.appendAccess.bind(t.store);
    t.store.appendAccess = async () => {
      throw new Error("disk full");
    };
    try {
      const r = await t.request({ url: `/cases/${id}`, key: KEYS.drA });
      expect(r.status).toBe(503);
      expect(r.text).not.toContain("crushing");
      expect((await t.request({ url: `/cases/${id}/evidence-graph?format=graphml`, key: KEYS.drA })).status).toBe(503);
    } finally {
      t.store.appendAccess = append;
    }
    expect((await t.request({ url: `/cases/${id}`, key: KEYS.drA })).status).toBe(200);
  });
});

describe("a tamper-evident trail", () => {
  it("medmmv audit verify passes an untouched store and names a changed byte or a removed event", async () => {
    const env = { MEDMMV_DATA_DIR: t.dataDir };
    const id = ((await t.request({ method: "POST", url: "/diagnose", json: chestPain(), key: KEYS.drA })).body as { caseId: string }).caseId;
    for (let i = 0; i < 5; i++) expect((await t.request({ url: `/cases/${id}`, key: KEYS.drA })).status).toBe(200);
    const ok = await medmmvCli(["audit", "verify"], env);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/holds/);
    const exported = await medmmvCli(["audit", "export", "--from", "2000-01-01", "--tenant", "clinic"], env);
    expect(exported.code, exported.stderr).toBe(0);
    const lines = exported.stdout.trim().split("\n").map((l) => JSON.parse(l) as { resourceType: string });
    expect(lines.length).toBeGreaterThan(5);
    expect(new Set(lines.map((l) => l.resourceType))).toEqual(new Set(["AuditEvent"]));

    const Database = (await import("better-sqlite3")).default;
    const db = new Database(join(t.dataDir, "medmmv.sqlite"));
    // As an intruder with the file would: around the append-only triggers (each open of the store puts them back).
    const tamper = (sql: string) => db.exec(`DROP TRIGGER IF EXISTS medmmv_access_events_no_update; DROP TRIGGER IF EXISTS medmmv_access_events_no_delete; ${sql}`);
    try {
      tamper("UPDATE medmmv_access_events SET outcome = 'succesS' WHERE tenant = 'clinic' AND seq = 3");
      const changed = await medmmvCli(["audit", "verify"], env);
      expect(changed.code).not.toBe(0);
      expect(changed.stderr).toMatch(/event 3 of tenant "clinic".*changed/);
      tamper("UPDATE medmmv_access_events SET outcome = 'success' WHERE tenant = 'clinic' AND seq = 3");
      expect((await medmmvCli(["audit", "verify"], env)).code).toBe(0);
      tamper("DELETE FROM medmmv_access_events WHERE tenant = 'clinic' AND seq = 5");
      const removed = await medmmvCli(["audit", "verify"], env);
      expect(removed.code).not.toBe(0);
      expect(removed.stderr).toMatch(/event 5 of tenant "clinic".*missing/);
    } finally {
      db.close();
    }
  }, 120_000);
});

describe("retention", () => {
  it("purges case content past its age, keeps the trail, and records the purge", async () => {
    const id = ((await t.request({ method: "POST", url: "/diagnose", json: chestPain(), key: KEYS.other })).body as { caseId: string }).caseId;
    const sweeper = new RetentionSweeper({ store: t.store, service: t.service, days: 30, logger: createLogger("silent", new LogCapture()) });
    expect(await sweeper.sweep(Date.now())).toBe(0);
    expect(await sweeper.sweep(Date.now() + 31 * 24 * 3600 * 1000)).toBeGreaterThanOrEqual(1);
    expect(await t.store.getCase(id)).toBeNull();
    const trailOfCase = (await t.store.listAccess({ tenant: "elsewhere", caseId: id, limit: 10 })).items;
    expect(trailOfCase.map((e) => [e.action, e.actor.id, e.outcome])).toEqual([
      ["create", "dr-x", "success"],
      ["purge", "retention", "success"],
    ]);
  });
});

describe("EHRs, each with its own keys and tenant", () => {
  it("EHR A's key signing as EHR B is refused; signing as itself it acts in its tenant, named by issuer and sub", async () => {
    const { SignJWT, exportJWK, generateKeyPair } = await import("jose");
    const PUBLIC = "https://medmmv.example.org";
    const a = await generateKeyPair("ES256");
    const b = await generateKeyPair("ES256");
    await writeFile(join(dir, "a.json"), JSON.stringify({ keys: [{ ...(await exportJWK(a.publicKey)), kid: "a", alg: "ES256" }] }));
    await writeFile(join(dir, "b.json"), JSON.stringify({ keys: [{ ...(await exportJWK(b.publicKey)), kid: "b", alg: "ES256" }] }));
    await writeFile(join(dir, "issuers.json"), JSON.stringify([
      { iss: "https://ehr-a.example", jwks: join(dir, "a.json"), tenant: "clinic" },
      { iss: "https://ehr-b.example", jwks: join(dir, "b.json"), tenant: "hospital-b" },
    ]));
    const ehr = await startInjectServer({ openai: t.openai, env: { MEDMMV_API_KEYS: "", MEDMMV_API_KEYS_FILE: join(dir, "keys.json"), MEDMMV_CDS_ISSUERS_FILE: join(dir, "issuers.json"), MEDMMV_PUBLIC_URL: PUBLIC, MEDMMV_AUTH_FAILURES_PER_MIN: "1000" } });
    try {
      const token = (key: CryptoKey, iss: string, path: string, sub = "Practitioner/42") =>
        new SignJWT({}).setProtectedHeader({ alg: "ES256", typ: "JWT" }).setIssuer(iss).setSubject(sub).setAudience(`${PUBLIC}${path}`).setIssuedAt().setExpirationTime("2m").setJti(crypto.randomUUID()).sign(key);
      const path = "/cases/some-case/fhir";
      const forged = await ehr.request({ url: path, key: await token(a.privateKey, "https://ehr-b.example", path) });
      expect(forged.status).toBe(401);
      const own = await ehr.request({ url: path, key: await token(a.privateKey, "https://ehr-a.example", path) });
      expect(own.status).toBe(404); // authenticated: the case is not A's
      const events = (await ehr.store.listAccess({ tenant: "clinic", action: "fhir", limit: 10 })).items;
      expect(events.map((e) => [e.actor, e.caseId, e.outcome])).toEqual([[{ type: "ehr", id: "https://ehr-a.example", sub: "Practitioner/42" }, "some-case", "denied"]]);
      expect((await ehr.store.listAccess({ tenant: "hospital-b", limit: 10 })).items).toEqual([]);

      // A `sub` holding a lone surrogate (a \\ud800 escape in the token's JSON) leaves the chain intact.
      const lone = await ehr.request({ url: path, key: await token(a.privateKey, "https://ehr-a.example", path, "Practitioner/\ud800-x") });
      expect(lone.status).toBe(404);
      expect((await ehr.store.listAccess({ tenant: "clinic", action: "fhir", limit: 10 })).items.at(-1)!.actor.sub).toBe("Practitioner/\uFFFD-x");
      expect(await verifyAccessTrail(ehr.store)).toMatchObject({ ok: true, breakCount: 0 });
    } finally {
      await ehr.close();
    }
  });
});
