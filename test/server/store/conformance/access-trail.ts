/**
 * Conformance for the access-trail role: per-tenant hash chains, append-only, gap-free under
 * concurrency, readable by tenant, case, time, actor and action, and verifiable: a changed
 * byte, a removed event (first, middle or last) is found and named.
 */
import { generateKeyPairSync } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { CaseStore, NewAccessEvent } from "../../../../src/server/store/case-store.js";
import { verifyAccessTrail } from "../../../../src/server/store/verify-access-trail.js";
import { accessSigner } from "../../../../src/server/store/access-signing.js";
import { currentAnchor } from "../../../../src/server/store/access-anchor.js";
import { accessEventHash } from "../../../../src/server/store/access-chain.js";
import { freshStoreEach, makeNewCase, makeResult, type StoreHarness } from "./fixtures.js";

export const accessEvent = (over: Partial<NewAccessEvent> = {}): NewAccessEvent => ({
  tenant: "clinic-a",
  actor: { type: "key", id: "dr-a" },
  action: "read",
  caseId: "case-1",
  outcome: "success",
  client: "127.0.0.1",
  requestId: "req-1",
  detail: { status: 200 },
  ...over,
});

/** Both stores refuse UPDATE/DELETE on the trail with triggers; tampering drops them first, as an intruder would. */
const DROP_TRIGGERS_SQLITE = "DROP TRIGGER IF EXISTS medmmv_access_events_no_update; DROP TRIGGER IF EXISTS medmmv_access_events_no_delete;";
const DROP_TRIGGERS_PG = "DROP TRIGGER IF EXISTS medmmv_access_events_no_change ON medmmv_access_events;";

export function describeAccessTrailConformance(name: string, makeStore: () => Promise<StoreHarness>): void {
  describe(`CaseStore conformance (access trail): ${name}`, () => {
    let h!: StoreHarness;
    let store!: CaseStore;
    freshStoreEach(makeStore, (fresh) => ((h = fresh), (store = fresh.store)));
    const dropTriggers = () => h.exec(store.backend === "sqlite" ? DROP_TRIGGERS_SQLITE : DROP_TRIGGERS_PG);

    it("chains each tenant's events: seq from 1 without gaps, each naming the previous hash", async () => {
      const a1 = await store.appendAccess(accessEvent());
      const b1 = await store.appendAccess(accessEvent({ tenant: "clinic-b", actor: { type: "ehr", id: "https://ehr-b", sub: "Practitioner/7" } }));
      const a2 = await store.appendAccess(accessEvent({ action: "delete", outcome: "denied", detail: { status: 403 } }));
      expect([a1.seq, a2.seq, b1.seq]).toEqual([1, 2, 1]);
      expect(a1.prevHash).toBe("");
      expect(a2.prevHash).toBe(a1.hash);
      expect(b1.prevHash).toBe("");
      const listed = await store.listAccess({ tenant: "clinic-a", limit: 10 });
      expect(listed.items).toEqual([a1, a2]);
      expect((await store.listAccess({ tenant: "clinic-b", limit: 10 })).items[0]!.actor).toEqual({ type: "ehr", id: "https://ehr-b", sub: "Practitioner/7" });
      expect(await verifyAccessTrail(store)).toMatchObject({ ok: true, tenants: 2, events: 3 });
    });

    it("keeps the trail of a deleted case", async () => {
      await store.createCase(makeNewCase("case-1", { tenant: "clinic-a" }));
      await store.appendAccess(accessEvent({ action: "create" }));
      await store.deleteCase("case-1");
      await store.appendAccess(accessEvent({ action: "delete", detail: { status: 204 } }));
      expect((await store.listAccess({ tenant: "clinic-a", caseId: "case-1", limit: 10 })).items.map((e) => e.action)).toEqual(["create", "delete"]);
    });

    it("filters by case, actor, action and time, and pages with a cursor", async () => {
      for (let i = 0; i < 5; i++) await store.appendAccess(accessEvent({ caseId: `c${i % 2}`, actor: { type: "key", id: i % 2 ? "dr-b" : "dr-a" }, action: i === 4 ? "search" : "read" }));
      expect((await store.listAccess({ tenant: "clinic-a", caseId: "c1", limit: 10 })).items.map((e) => e.seq)).toEqual([2, 4]);
      expect((await store.listAccess({ tenant: "clinic-a", actorId: "dr-a", limit: 10 })).items.map((e) => e.seq)).toEqual([1, 3, 5]);
      expect((await store.listAccess({ tenant: "clinic-a", action: "search", limit: 10 })).items.map((e) => e.seq)).toEqual([5]);
      const all = (await store.listAccess({ tenant: "clinic-a", limit: 10 })).items;
      expect((await store.listAccess({ tenant: "clinic-a", from: all[2]!.at, to: all[4]!.at, limit: 10 })).items.map((e) => e.seq)).toEqual([3, 4]);
      const p1 = await store.listAccess({ tenant: "clinic-a", limit: 2 });
      const p2 = await store.listAccess({ tenant: "clinic-a", limit: 2, cursor: p1.nextCursor });
      const p3 = await store.listAccess({ tenant: "clinic-a", limit: 2, cursor: p2.nextCursor });
      expect([...p1.items, ...p2.items, ...p3.items].map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
      expect(p3.nextCursor).toBeNull();
    });

    it("refuses to change or remove an event (append-only)", async () => {
      await store.appendAccess(accessEvent());
      await expect(h.exec("UPDATE medmmv_access_events SET action = 'x'")).rejects.toThrow(/append-only/);
      await expect(h.exec("DELETE FROM medmmv_access_events")).rejects.toThrow(/append-only/);
      expect(await verifyAccessTrail(store)).toMatchObject({ ok: true, events: 1 });
    });

    it("appends concurrently from two store objects without gaps or forks", async () => {
      const other = await h.reopen();
      await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? other : store).appendAccess(accessEvent({ requestId: `r${i}` }))));
      const items = (await store.listAccess({ tenant: "clinic-a", limit: 100 })).items;
      expect(items.map((e) => e.seq)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
      expect(await verifyAccessTrail(store)).toMatchObject({ ok: true, events: 20 });
    });

    describe("verification names the first break", () => {
      const seed = async () => {
        for (let i = 0; i < 4; i++) await store.appendAccess(accessEvent({ requestId: `r${i}` }));
        await store.appendAccess(accessEvent({ tenant: "clinic-b" }));
        await dropTriggers();
      };

      it("one changed byte of one event", async () => {
        await seed();
        await h.exec("UPDATE medmmv_access_events SET client = '127.0.0.2' WHERE tenant = 'clinic-a' AND seq = 3");
        expect(await verifyAccessTrail(store)).toMatchObject({ ok: false, firstBreak: { tenant: "clinic-a", seq: 3, problem: expect.stringMatching(/changed/) } });
      });

      it("a changed detail that is no longer JSON", async () => {
        await seed();
        await h.exec(`UPDATE medmmv_access_events SET detail = '{"status":20' WHERE tenant = 'clinic-b' AND seq = 1`);
        expect(await verifyAccessTrail(store)).toMatchObject({ ok: false, firstBreak: { tenant: "clinic-b", seq: 1 } });
      });

      it("a removed event in the middle, at the start and at the end", async () => {
        await seed();
        await h.exec("DELETE FROM medmmv_access_events WHERE tenant = 'clinic-a' AND seq = 2");
        expect(await verifyAccessTrail(store)).toMatchObject({ ok: false, firstBreak: { tenant: "clinic-a", seq: 2, problem: expect.stringMatching(/missing/) } });
        await h.exec("DELETE FROM medmmv_access_events WHERE tenant = 'clinic-a' AND seq = 1");
        expect(await verifyAccessTrail(store)).toMatchObject({ ok: false, firstBreak: { tenant: "clinic-a", seq: 1 } });
      });

      it("every break, not only the first: a changed event in two tenants' chains and a removed one", async () => {
        await seed();
        await h.exec("UPDATE medmmv_access_events SET client = '127.0.0.2' WHERE tenant = 'clinic-a' AND seq = 1");
        await h.exec("DELETE FROM medmmv_access_events WHERE tenant = 'clinic-a' AND seq = 3");
        await h.exec("UPDATE medmmv_access_events SET action = 'export' WHERE tenant = 'clinic-b' AND seq = 1");
        const v = await verifyAccessTrail(store);
        expect(v.ok).toBe(false);
        expect(v.breaks.map((b) => [b.tenant, b.seq])).toEqual([["clinic-a", 1], ["clinic-a", 3], ["clinic-b", 1]]);
        expect(v.breakCount).toBe(3);
      });

      it("a removed last event", async () => {
        await seed();
        await h.exec("DELETE FROM medmmv_access_events WHERE tenant = 'clinic-a' AND seq = 4");
        expect(await verifyAccessTrail(store)).toMatchObject({ ok: false, firstBreak: { tenant: "clinic-a", seq: 4, problem: expect.stringMatching(/removed/) } });
      });
    });
  });
}

/** Keys as an operator would make them: an HMAC secret, an Ed25519 private key (PEM). */
export const HMAC_KEY = "audit-signing-secret-0123456789abcdefghijkl";
export const ED25519_KEY = generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }).toString();

/**
 * The trail signed with a key the store does not hold: an intruder with write access to the
 * store (triggers dropped) who removes, invents or re-hashes events, and moves the head to
 * match, is named event by event; an anchor kept outside the store catches a chain cut back.
 */
export function describeSignedAccessTrailConformance(name: string, makeStore: () => Promise<StoreHarness>): void {
  describe(`CaseStore conformance (signed access trail): ${name}`, () => {
    let h!: StoreHarness;
    freshStoreEach(makeStore, (fresh) => (h = fresh));
    const dropTriggers = (s: CaseStore) => h.exec(s.backend === "sqlite" ? DROP_TRIGGERS_SQLITE : DROP_TRIGGERS_PG);
    const quote = (v: string | null) => (v === null ? "NULL" : `'${v.replace(/'/g, "''")}'`);

    /** What an intruder who knows the code but not the key does: recompute every hash from `fromSeq` on, and the head. */
    const rehash = async (tenant: string) => {
      const items = (await h.store.listAccess({ tenant, limit: 1000 })).items;
      let prevHash = "";
      for (const [i, e] of items.entries()) {
        const seq = i + 1;
        const next = { ...e, seq, prevHash };
        const { hash: _h, signature: _s, ...rest } = next;
        const hash = accessEventHash(rest);
        await h.exec(`UPDATE medmmv_access_events SET seq = ${seq}, prev_hash = ${quote(prevHash)}, hash = ${quote(hash)} WHERE tenant = ${quote(tenant)} AND seq = ${e.seq}`);
        prevHash = hash;
      }
      await h.exec(`UPDATE medmmv_access_heads SET last_seq = ${items.length}, last_hash = ${quote(prevHash)} WHERE tenant = ${quote(tenant)}`);
    };

    for (const [kind, key] of [["HMAC-SHA256", HMAC_KEY], ["Ed25519", ED25519_KEY]] as const) {
      it(`signs every event (${kind}); verify with the key holds, and names every event an intruder removed and re-hashed`, async () => {
        const signer = accessSigner(key);
        const store = await h.reopen({ auditSigningKey: key });
        for (let i = 0; i < 6; i++) await store.appendAccess(accessEvent({ requestId: `r${i}`, actor: { type: "key", id: i === 2 ? "snooper" : "dr-a" } }));
        const items = (await store.listAccess({ tenant: "clinic-a", limit: 10 })).items;
        expect(items.every((e) => e.signature?.startsWith(`${signer.algorithm}:${signer.keyId}:`))).toBe(true);
        expect(await verifyAccessTrail(store, { signer })).toMatchObject({ ok: true, events: 6, signed: 6 });

        // Remove the snooping event (seq 3), renumber and re-hash the rest, move the head: the
        // unkeyed chain holds again, the signatures do not.
        await dropTriggers(store);
        await h.exec("DELETE FROM medmmv_access_events WHERE tenant = 'clinic-a' AND seq = 3");
        await rehash("clinic-a");
        expect(await verifyAccessTrail(store)).toMatchObject({ ok: true, events: 5 });
        const v = await verifyAccessTrail(store, { signer });
        expect(v.ok).toBe(false);
        expect(v.breaks.map((b) => b.seq)).toEqual([3, 4, 5]);
        expect(v.breaks[0]!.problem).toMatch(/signature does not match/);
      });
    }

    it("names an invented event (no signature, or one made with another key) and a stripped chain", async () => {
      const signer = accessSigner(HMAC_KEY);
      const store = await h.reopen({ auditSigningKey: HMAC_KEY });
      for (let i = 0; i < 3; i++) await store.appendAccess(accessEvent({ requestId: `r${i}` }));
      // An auditor read invented by an unkeyed store object, and one by a store with the intruder's own key.
      await h.store.appendAccess(accessEvent({ actor: { type: "key", id: "qa-1" }, action: "audit-read" }));
      const intruder = await h.reopen({ auditSigningKey: "intruders-own-secret-0123456789abcdefgh" });
      await intruder.appendAccess(accessEvent({ actor: { type: "key", id: "qa-1" }, action: "audit-read" }));
      const v = await verifyAccessTrail(store, { signer });
      expect(v.breaks.map((b) => [b.seq, b.problem.match(/another key|no valid signature/)?.[0]])).toEqual([
        [5, "another key"],
        [4, "no valid signature"],
      ]);
    });

    it("an anchor kept outside the store proves a chain cut back to an earlier signed event", async () => {
      const signer = accessSigner(ED25519_KEY);
      const store = await h.reopen({ auditSigningKey: ED25519_KEY });
      for (let i = 0; i < 4; i++) await store.appendAccess(accessEvent({ requestId: `r${i}` }));
      await store.appendAccess(accessEvent({ tenant: "clinic-b" }));
      const anchor = await currentAnchor(store, signer, new Date().toISOString());
      expect(anchor.heads.map((x) => [x.tenant, x.seq])).toEqual([["clinic-a", 4], ["clinic-b", 1]]);
      expect(await verifyAccessTrail(store, { signer, anchor })).toMatchObject({ ok: true, anchored: 2 });
      await store.appendAccess(accessEvent({ requestId: "later" }));
      expect(await verifyAccessTrail(store, { signer, anchor })).toMatchObject({ ok: true, anchored: 2 });

      // Cut clinic-a back to event 2 and move its head: every remaining event is validly signed.
      await dropTriggers(store);
      await h.exec("DELETE FROM medmmv_access_events WHERE tenant = 'clinic-a' AND seq > 2");
      const two = (await store.listAccess({ tenant: "clinic-a", limit: 10 })).items[1]!;
      await h.exec(`UPDATE medmmv_access_heads SET last_seq = 2, last_hash = '${two.hash}' WHERE tenant = 'clinic-a'`);
      expect(await verifyAccessTrail(store, { signer })).toMatchObject({ ok: true });
      const v = await verifyAccessTrail(store, { signer, anchor });
      expect(v).toMatchObject({ ok: false, anchored: 1, breaks: [{ tenant: "clinic-a", seq: 4, problem: expect.stringMatching(/anchored head .* no longer in the trail/) }] });
    });

    it("a lone surrogate (or NUL) in a JWT sub leaves the chain intact, signed or not", async () => {
      const store = await h.reopen({ auditSigningKey: HMAC_KEY });
      // As jose hands them over from a JWT's JSON, whose \\u escapes may encode any UTF-16 unit.
      const odd = ["Practitioner/\\ud800x", "a\\udfffb", "tail\\ud83d", "nul\\u0000sub"].map((s) => JSON.parse(`"${s}"`) as string);
      for (const sub of odd) await store.appendAccess(accessEvent({ actor: { type: "ehr", id: "https://ehr", sub } }));
      await h.store.appendAccess(accessEvent({ actor: { type: "ehr", id: "https://ehr", sub: odd[0] } }));
      await store.appendAccess(accessEvent());
      const read = (await store.listAccess({ tenant: "clinic-a", limit: 10 })).items;
      expect(read[0]!.actor.sub).toBe("Practitioner/\uFFFDx");
      expect(await verifyAccessTrail(store, { signer: accessSigner(HMAC_KEY) })).toMatchObject({ ok: true, events: 6, breakCount: 0 });
    });

    it("indexes the trail by actor and by action", async () => {
      const plan = await h.explain("SELECT seq FROM medmmv_access_events WHERE tenant = 'clinic-a' AND actor_id = 'dr-a' ORDER BY tenant, seq");
      expect(plan).toMatch(/medmmv_access_events_actor/);
      expect(await h.explain("SELECT seq FROM medmmv_access_events WHERE tenant = 'clinic-a' AND action = 'read' ORDER BY tenant, seq")).toMatch(/medmmv_access_events_action/);
    });
  });
}

/** Case search: tenant and owner scopes, the filters on the columns saveResult writes, keyset pages newest first. */
export function describeCaseSearchConformance(name: string, makeStore: () => Promise<StoreHarness>): void {
  describe(`CaseStore conformance (case search): ${name}`, () => {
    let h!: StoreHarness;
    let store!: CaseStore;
    freshStoreEach(makeStore, (fresh) => ((h = fresh), (store = fresh.store)));

    it("scopes by tenant and owner, filters on the saved result's columns, pages newest first", async () => {
      const mk = async (id: string, owner: string, tenant: string, createdAt: string, result?: ReturnType<typeof makeResult>) => {
        await store.createCase(makeNewCase(id, { owner, tenant, submittedBy: `key-${owner}`, input: { ...makeNewCase(id).input, pathway: "bone-marrow" } as never }));
        await h.setCreatedAt(id, createdAt);
        if (result) await store.saveResult(id, result, null);
      };
      const unsupported = makeResult("c3");
      unsupported.path!.steps[0]!.claims.push({ text: "x", verdict: "unsupported", evidence: [] }, { text: "y", verdict: "contradicted", evidence: [] });
      unsupported.provenance.models = { executor: "model-x", judge: "judge-y" };
      unsupported.provenance.prompts = { rollout: "abc123" };
      await mk("c1", "a", "t1", "2026-01-01T00:00:00.000Z", makeResult("c1"));
      await mk("c2", "b", "t1", "2026-01-02T00:00:00.000Z", makeResult("c2", "abstained"));
      await mk("c3", "a", "t1", "2026-01-03T00:00:00.000Z", unsupported);
      await mk("c4", "a", "t2", "2026-01-04T00:00:00.000Z", makeResult("c4"));
      await mk("c5", "a", "t1", "2026-01-05T00:00:00.000Z");

      const ids = async (q: Omit<Parameters<CaseStore["listCases"]>[0], "limit">) => (await store.listCases({ limit: 100, ...q })).items.map((i) => i.id);
      expect(await ids({ tenant: "t1" })).toEqual(["c5", "c3", "c2", "c1"]);
      expect(await ids({ tenant: "t1", owner: "a" })).toEqual(["c5", "c3", "c1"]);
      expect(await ids({ tenant: "t1", abstained: true })).toEqual(["c2"]);
      expect(await ids({ tenant: "t1", abstained: false })).toEqual(["c3", "c1"]);
      expect(await ids({ tenant: "t1", minUnsupportedClaims: 1 })).toEqual(["c3"]);
      expect(await ids({ tenant: "t1", model: "model-x" })).toEqual(["c3"]);
      expect(await ids({ tenant: "t1", model: "model" })).toEqual([]);
      expect(await ids({ tenant: "t1", promptHash: "ABC123" })).toEqual(["c3"]);
      expect(await ids({ tenant: "t1", answer: "B" })).toEqual(["c3", "c1"]);
      expect(await ids({ tenant: "t1", answer: "septic ARTHRITIS" })).toEqual(["c3", "c1"]);
      expect(await ids({ tenant: "t1", pathway: "bone-marrow" })).toEqual(["c5", "c3", "c2", "c1"]);
      expect(await ids({ tenant: "t1", submittedBy: "key-b" })).toEqual(["c2"]);
      expect(await ids({ tenant: "t1", from: "2026-01-02", to: "2026-01-05T00:00:00Z" })).toEqual(["c3", "c2"]);
      expect(await ids({ tenant: "t1", status: "queued" })).toEqual(["c5"]);

      const row = (await store.listCases({ tenant: "t1", limit: 100 })).items.find((i) => i.id === "c3")!;
      expect(row).toMatchObject({ answer: { option: "B", text: "Septic arthritis" }, answerSupport: 0.72, abstained: false, unsupportedClaims: 2, models: ["judge-y", "model-x"], submittedBy: "key-a", pathway: "bone-marrow" });
      expect(row).not.toHaveProperty("notes");

      const p1 = await store.listCases({ tenant: "t1", limit: 3 });
      const p2 = await store.listCases({ tenant: "t1", limit: 3, cursor: p1.nextCursor });
      expect([...p1.items, ...p2.items].map((i) => i.id)).toEqual(["c5", "c3", "c2", "c1"]);
      expect(p2.nextCursor).toBeNull();
      expect(String(await store.explainListCases({ tenant: "t1", limit: 20 }))).toMatch(/medmmv_cases_tenant/);
    });

    it("filters by agents filtered or refused, and by the last CDS card feedback", async () => {
      const filtered = makeResult("f1");
      filtered.provenance.failures = [{ branch: "image-doctor", code: "CONTENT_FILTERED", message: "filtered" }, { branch: "rollout-1", code: "LLM_FATAL", message: "down" }];
      for (const [id, result] of [["f1", filtered], ["f2", makeResult("f2")]] as const) {
        await store.createCase(makeNewCase(id, { tenant: "t1" }));
        await store.saveResult(id, result, null);
      }
      await store.createCase(makeNewCase("f3", { tenant: "t1" }));
      const ids = async (q: Omit<Parameters<CaseStore["listCases"]>[0], "limit" | "tenant">) => (await store.listCases({ tenant: "t1", limit: 100, ...q })).items.map((i) => i.id).sort();
      expect(await ids({ filteredOrRefused: true })).toEqual(["f1"]);
      expect(await ids({ filteredOrRefused: false })).toEqual(["f2"]);
      expect(await store.setFeedback("f2", "accepted")).toBe(true);
      expect(await store.setFeedback("f2", "overridden")).toBe(true);
      expect(await store.setFeedback("no-such-case", "accepted")).toBe(false);
      expect(await ids({ feedback: "overridden" })).toEqual(["f2"]);
      expect(await ids({ feedback: "accepted" })).toEqual([]);
      const rows = (await store.listCases({ tenant: "t1", limit: 100 })).items;
      expect(rows.find((r) => r.id === "f1")).toMatchObject({ filteredOrRefused: true, feedback: null });
      expect(rows.find((r) => r.id === "f2")).toMatchObject({ filteredOrRefused: false, feedback: "overridden" });
      expect(rows.find((r) => r.id === "f3")).toMatchObject({ filteredOrRefused: null, feedback: null });

      // Cases finished before the column existed get it from their result when the store next opens.
      await h.exec("UPDATE medmmv_cases SET stopped_agents = NULL");
      expect(await ids({ filteredOrRefused: true })).toEqual([]);
      const reopened = await h.reopen();
      expect((await reopened.listCases({ tenant: "t1", limit: 100, filteredOrRefused: true })).items.map((i) => i.id)).toEqual(["f1"]);
      expect((await reopened.listCases({ tenant: "t1", limit: 100, filteredOrRefused: false })).items.map((i) => i.id)).toEqual(["f2"]);
    });

    it("lists the cases created before an instant, oldest first, for retention", async () => {
      for (const [id, at] of [["r2", "2026-02-01T00:00:00.000Z"], ["r1", "2026-01-01T00:00:00.000Z"], ["r3", "2026-03-01T00:00:00.000Z"]] as const) {
        await store.createCase(makeNewCase(id, { tenant: `t-${id}` }));
        await h.setCreatedAt(id, at);
      }
      expect(await store.listCreatedBefore("2026-02-15T00:00:00.000Z", 10)).toEqual([{ id: "r1", tenant: "t-r1" }, { id: "r2", tenant: "t-r2" }]);
      expect(await store.listCreatedBefore("2026-12-31T00:00:00.000Z", 1)).toEqual([{ id: "r1", tenant: "t-r1" }]);
    });

    it("a case from before teams is its owner's tenant until its key joins one", async () => {
      await store.createCase(makeNewCase("old", { owner: "digest-a" }));
      expect((await store.getCase("old"))).toMatchObject({ tenant: "digest-a", submittedBy: "" });
      expect(await store.adoptCases("digest-a", "clinic", "dr-a")).toBe(1);
      expect(await store.getCase("old")).toMatchObject({ tenant: "clinic", submittedBy: "dr-a" });
      expect(await store.adoptCases("digest-a", "clinic", "dr-a")).toBe(0);
    });
  });
}
