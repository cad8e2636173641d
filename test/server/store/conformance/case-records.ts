/**
 * Conformance for the case-records role: creating, reading, listing, updating and deleting cases,
 * and the content-addressed images they reference.
 */
import { describe, expect, it } from "vitest";
import type { CaseStore } from "../../../../src/server/store/case-store.js";
import { MedmmvError } from "../../../../src/core/contracts/errors.js";
import { freshStoreEach, type StoreHarness, makeImage, makeNewCase, makeResult, ISO, expectCode } from "./fixtures.js";

export function describeCaseRecordsConformance(name: string, makeStore: () => Promise<StoreHarness>): void {
  describe(`CaseStore conformance (case records): ${name}`, () => {
    let h!: StoreHarness;
    let store!: CaseStore;
    freshStoreEach(makeStore, (fresh) => ((h = fresh), (store = fresh.store)));

    describe("cases", () => {
      it("creates a queued case with ISO timestamps and reads it back exactly", async () => {
        const nc = makeNewCase("case-1", { idempotencyKey: "k1", requestHash: "sha256:body" });
        const created = await store.createCase(nc);
        expect(created).toMatchObject({
          id: "case-1",
          owner: "owner-a",
          status: "queued",
          progress: null,
          result: null,
          fullEvidenceGraph: null,
          error: null,
          idempotencyKey: "k1",
          requestHash: "sha256:body",
        });
        expect(created.input).toEqual(nc.input);
        expect(created.options).toEqual(nc.options);
        expect(created.createdAt).toMatch(ISO);
        expect(created.updatedAt).toBe(created.createdAt);
        expect(Math.abs(Date.parse(created.createdAt) - Date.now())).toBeLessThan(60_000);
        expect(await store.getCase("case-1")).toEqual(created);
        expect(await store.getCase("nope")).toBeNull();
      });

      it("rejects a duplicate id with CONFLICT and leaves the first case untouched", async () => {
        const first = await store.createCase(makeNewCase("dup"));
        await expectCode(store.createCase(makeNewCase("dup", { owner: "owner-b" })), "CONFLICT");
        expect(await store.getCase("dup")).toEqual(first);
      });

      it("scopes idempotency keys per owner", async () => {
        const a = await store.createCase(makeNewCase("c-a", { owner: "alice", idempotencyKey: "same" }));
        const b = await store.createCase(makeNewCase("c-b", { owner: "bob", idempotencyKey: "same" }));
        expect((await store.findByIdempotencyKey("alice", "same"))?.id).toBe(a.id);
        expect((await store.findByIdempotencyKey("bob", "same"))?.id).toBe(b.id);
        expect(await store.findByIdempotencyKey("carol", "same")).toBeNull();
        expect(await store.findByIdempotencyKey("alice", "other")).toBeNull();
        // Cases without a key never collide with each other.
        await store.createCase(makeNewCase("c-n1", { owner: "alice" }));
        await store.createCase(makeNewCase("c-n2", { owner: "alice", idempotencyKey: null }));
      });

      it("lets only one of several racing creates with the same owner and key succeed", async () => {
        const attempts = await Promise.allSettled(
          Array.from({ length: 6 }, (_, i) => store.createCase(makeNewCase(`race-${i}`, { idempotencyKey: "once" }))),
        );
        const ok = attempts.filter((a) => a.status === "fulfilled");
        const failed = attempts.filter((a): a is PromiseRejectedResult => a.status === "rejected");
        expect(ok).toHaveLength(1);
        expect(failed).toHaveLength(5);
        for (const f of failed) {
          expect(f.reason).toBeInstanceOf(MedmmvError);
          expect((f.reason as MedmmvError).code).toBe("CONFLICT");
        }
        const winner = (ok[0] as PromiseFulfilledResult<{ id: string }>).value.id;
        expect((await store.findByIdempotencyKey("owner-a", "once"))?.id).toBe(winner);
        const losers = Array.from({ length: 6 }, (_, i) => `race-${i}`).filter((id) => id !== winner);
        for (const id of losers) expect(await store.getCase(id)).toBeNull();
      });

      it("updates status, progress and error, moving updatedAt forward each time", async () => {
        const c = await store.createCase(makeNewCase("st"));
        await store.setStatus("st", "running");
        const running = await store.getCase("st");
        expect(running?.status).toBe("running");
        expect(running!.updatedAt > c.updatedAt).toBe(true);
        expect(running!.createdAt).toBe(c.createdAt);

        await store.setProgress("st", { step: "rollouts", done: 2, total: 5 });
        const progressed = await store.getCase("st");
        expect(progressed?.progress).toEqual({ step: "rollouts", done: 2, total: 5 });
        expect(progressed!.updatedAt > running!.updatedAt).toBe(true);

        await store.setStatus("st", "failed", { code: "PIPELINE_FAILED", message: "no paths" });
        expect(await store.getCase("st")).toMatchObject({
          status: "failed",
          error: { code: "PIPELINE_FAILED", message: "no paths" },
          progress: { step: "rollouts", done: 2, total: 5 },
        });
      });

      it("leaves a finished case as it is: no status, result or final event after the first", async () => {
        await store.createCase(makeNewCase("fixed"));
        expect(await store.setStatus("fixed", "running")).toBe(true);
        const first = makeResult("fixed", "completed");
        expect(await store.saveResult("fixed", first, null, { type: "final", data: { status: "completed" } })).toMatchObject({ type: "final" });
        // A late writer: a replica that lost the case, or a duplicate run finishing second.
        expect(await store.setStatus("fixed", "running")).toBe(false);
        expect(await store.setStatus("fixed", "failed", { code: "ABORTED", message: "late" })).toBe(false);
        expect(await store.saveResult("fixed", makeResult("fixed", "failed"), null, { type: "final", data: { status: "failed" } })).toBeNull();
        expect(await store.saveResult("fixed", makeResult("fixed", "abstained"), null)).toBeNull();
        const now = await store.getCase("fixed");
        expect(now).toMatchObject({ status: "completed", error: null });
        expect(now?.result).toEqual(first);
        expect((await store.listEvents("fixed")).filter((e) => e.type === "final")).toHaveLength(1);
        await expectCode(store.saveResult("ghost", first, null), "NOT_FOUND");
      });

      it("saves the result and full graph atomically, taking the status from the result", async () => {
        const c = await store.createCase(makeNewCase("res"));
        await store.setStatus("res", "running");
        const result = makeResult("res", "abstained");
        const full = {
          options: { type: "directed", multi: true, allowSelfLoops: true },
          attributes: {},
          nodes: [
            { key: "f:1", attributes: { kind: "finding", label: "fever 38.9 °C", source: { agent: "text-doctor", span: [3, 9] } } },
            { key: "k:2", attributes: { kind: "knowledge", status: "retracted", score: -0.5 } },
          ],
          edges: [{ key: "e1", source: "f:1", target: "k:2", attributes: { relation: "supports" } }],
        };
        await store.saveResult("res", result, full);
        const saved = await store.getCase("res");
        expect(saved?.status).toBe("abstained");
        expect(saved?.result).toEqual(result);
        expect(saved?.fullEvidenceGraph).toEqual(full);
        expect(saved!.updatedAt > c.updatedAt).toBe(true);

      });

      it("takes the error of a failed result", async () => {
        await store.createCase(makeNewCase("res-failed"));
        await store.saveResult("res-failed", makeResult("res-failed", "failed"), null);
        expect(await store.getCase("res-failed")).toMatchObject({
          status: "failed",
          fullEvidenceGraph: null,
          error: { code: "PIPELINE_FAILED", message: "nothing left" },
        });
      });

      it("saves a result and its final event in one write, the event numbered after the others", async () => {
        await store.createCase(makeNewCase("fin"));
        await store.appendEvent("fin", "rollout", { index: 0 });
        const event = await store.saveResult("fin", makeResult("fin"), null, { type: "final", data: { status: "completed" } });
        expect(event).toMatchObject({ caseId: "fin", seq: 2, type: "final", data: { status: "completed" } });
        const events = await store.listEvents("fin");
        expect(events.map((e) => [e.seq, e.type])).toEqual([
          [1, "rollout"],
          [2, "final"],
        ]);
        expect((await store.getCase("fin"))?.status).toBe("completed");
        await store.appendEvent("fin", "late", {});
        expect((await store.listEvents("fin", 2)).map((e) => e.seq)).toEqual([3]);
        await expectCode(store.saveResult("ghost", makeResult("ghost"), null, { type: "final", data: {} }), "NOT_FOUND");
      });

      it("reports NOT_FOUND when updating a case that does not exist", async () => {
        await expectCode(store.setStatus("ghost", "running"), "NOT_FOUND");
        await expectCode(store.setProgress("ghost", { step: "x", done: 0, total: 1 }), "NOT_FOUND");
        await expectCode(store.saveResult("ghost", makeResult("ghost"), null), "NOT_FOUND");
        await expectCode(store.appendEvent("ghost", "status", {}), "NOT_FOUND");
      });
    });

    describe("listing", () => {
      it("lists only the owner's cases, newest first, with answers from results", async () => {
        await store.createCase(makeNewCase("a1", { owner: "alice" }));
        await store.createCase(makeNewCase("b1", { owner: "bob" }));
        await store.createCase(makeNewCase("a2", { owner: "alice" }));
        await store.saveResult("a1", makeResult("a1"), null);
        const page = await store.listCases({ owner: "alice", limit: 10 });
        expect(page.items.map((i) => i.id)).toEqual(["a2", "a1"]);
        expect(page.nextCursor).toBeNull();
        expect(page.items[1]).toMatchObject({ status: "completed", answer: { option: "B", text: "Septic arthritis" } });
        expect(page.items[0]).toMatchObject({ status: "queued", answer: null });
        expect(page.items[0]!.createdAt).toMatch(ISO);
        expect(page.items[0]!.updatedAt).toMatch(ISO);
        expect((await store.listCases({ owner: "bob", limit: 10 })).items.map((i) => i.id)).toEqual(["b1"]);
        expect((await store.listCases({ owner: "nobody", limit: 10 })).items).toEqual([]);
      });

      it("paginates with a cursor that stays stable while new cases arrive", async () => {
        for (let i = 1; i <= 7; i++) await store.createCase(makeNewCase(`p${i}`));
        const seen: string[] = [];
        let cursor: string | null = null;
        let pages = 0;
        do {
          const res: Awaited<ReturnType<CaseStore["listCases"]>> = await store.listCases({ owner: "owner-a", limit: 3, cursor });
          expect(res.items.length).toBeLessThanOrEqual(3);
          seen.push(...res.items.map((i) => i.id));
          cursor = res.nextCursor;
          pages++;
          // New work lands between page requests; it must not shift or repeat later pages.
          await store.createCase(makeNewCase(`new-${pages}`));
        } while (cursor && pages < 10);
        expect(seen).toEqual(["p7", "p6", "p5", "p4", "p3", "p2", "p1"]);
        expect(pages).toBe(3);
        const first = await store.listCases({ owner: "owner-a", limit: 2 });
        expect(first.items.map((i) => i.id)).toEqual(["new-3", "new-2"]);
      });

      it("breaks createdAt ties by id, descending, across page boundaries", async () => {
        await store.createCase(makeNewCase("old"));
        for (const id of ["t1", "t3", "t2", "t5", "t4"]) await store.createCase(makeNewCase(id));
        const same = "2030-01-01T00:00:00.000Z";
        for (const id of ["t1", "t2", "t3", "t4", "t5"]) await h.setCreatedAt(id, same);
        const seen: string[][] = [];
        let cursor: string | null = null;
        do {
          const res: Awaited<ReturnType<CaseStore["listCases"]>> = await store.listCases({ owner: "owner-a", limit: 2, cursor });
          seen.push(res.items.map((i) => i.id));
          cursor = res.nextCursor;
        } while (cursor && seen.length < 10);
        expect(seen).toEqual([["t5", "t4"], ["t3", "t2"], ["t1", "old"]]);
        expect((await store.getCase("t3"))?.createdAt).toBe(same);
      });

      it("returns no cursor when the last page is exactly full", async () => {
        for (let i = 1; i <= 4; i++) await store.createCase(makeNewCase(`x${i}`));
        const one = await store.listCases({ owner: "owner-a", limit: 2 });
        const two = await store.listCases({ owner: "owner-a", limit: 2, cursor: one.nextCursor });
        expect(two.items.map((i) => i.id)).toEqual(["x2", "x1"]);
        expect(two.nextCursor).toBeNull();
      });

      it("filters by status and rejects bad cursors and limits", async () => {
        for (let i = 1; i <= 5; i++) await store.createCase(makeNewCase(`s${i}`));
        await store.saveResult("s2", makeResult("s2"), null);
        await store.saveResult("s4", makeResult("s4"), null);
        await store.setStatus("s3", "running");
        const done = await store.listCases({ owner: "owner-a", limit: 1, status: "completed" });
        expect(done.items.map((i) => i.id)).toEqual(["s4"]);
        const rest = await store.listCases({ owner: "owner-a", limit: 1, status: "completed", cursor: done.nextCursor });
        expect(rest.items.map((i) => i.id)).toEqual(["s2"]);
        expect(rest.nextCursor).toBeNull();
        const queued = await store.listCases({ owner: "owner-a", limit: 100, status: "queued" });
        expect(queued.items.map((i) => i.id)).toEqual(["s5", "s1"]);
        await expectCode(store.listCases({ owner: "owner-a", limit: 5, cursor: "not-a-cursor" }), "INVALID_INPUT");
        await expectCode(store.listCases({ owner: "owner-a", limit: 0 }), "INVALID_INPUT");
        await expectCode(store.listCases({ owner: "owner-a", limit: 101 }), "INVALID_INPUT");
      });

      it("counts the cases of other owners, whatever their status", async () => {
        expect(await store.countCasesNotOwnedBy("demo")).toBe(0);
        await store.createCase(makeNewCase("o1", { owner: "demo" }));
        await store.createCase(makeNewCase("o2", { owner: "demo" }));
        expect(await store.countCasesNotOwnedBy("demo")).toBe(0);
        await store.createCase(makeNewCase("o3", { owner: "cli" }));
        await store.createCase(makeNewCase("o4", { owner: "someone" }));
        await store.saveResult("o4", makeResult("o4"), null);
        expect(await store.countCasesNotOwnedBy("demo")).toBe(2);
        expect(await store.countCasesNotOwnedBy("cli")).toBe(3);
        await store.deleteCase("o3");
        expect(await store.countCasesNotOwnedBy("demo")).toBe(1);
      });

      it("counts the cases in each status, every owner together", async () => {
        expect(await store.countCasesByStatus()).toEqual({ queued: 0, running: 0, completed: 0, abstained: 0, failed: 0 });
        await store.createCase(makeNewCase("s1", { owner: "alice" }));
        await store.createCase(makeNewCase("s2", { owner: "bob" }));
        await store.createCase(makeNewCase("s3", { owner: "bob" }));
        await store.setStatus("s2", "running");
        await store.saveResult("s3", makeResult("s3"), null);
        expect(await store.countCasesByStatus()).toEqual({ queued: 1, running: 1, completed: 1, abstained: 0, failed: 0 });
      });

      it("lists unfinished cases across owners, oldest first", async () => {
        await store.createCase(makeNewCase("u1", { owner: "alice" }));
        await store.createCase(makeNewCase("u2", { owner: "bob" }));
        await store.createCase(makeNewCase("u3", { owner: "alice" }));
        await store.createCase(makeNewCase("u4", { owner: "carol" }));
        await store.setStatus("u2", "running");
        await store.saveResult("u3", makeResult("u3"), null);
        await store.setStatus("u4", "failed", { code: "ABORTED", message: "aborted" });
        const open = await store.listUnfinished();
        expect(open.map((c) => [c.id, c.status])).toEqual([
          ["u1", "queued"],
          ["u2", "running"],
        ]);
        expect(open[0]!.input).toEqual(makeNewCase("u1").input);
      });
    });

    describe("images", () => {
      it("stores an image once by content hash and returns the same bytes", async () => {
        const img = makeImage("xray", "image/jpeg");
        await store.putImage(img);
        await store.putImage({ ...img, id: "another-id", caption: "again" });
        const got = await store.getImage(img.sha256);
        expect(got).not.toBeNull();
        expect(got!.data).toBe(img.data);
        expect(got!.mimeType).toBe("image/jpeg");
        expect(got!.sha256).toBe(img.sha256);
        expect(Buffer.from(got!.data, "base64").equals(Buffer.from(img.data, "base64"))).toBe(true);
        expect(await store.getImage(makeImage("never-stored").sha256)).toBeNull();
      });

      it("refuses an image whose sha256 does not match its bytes", async () => {
        const img = makeImage("a");
        await expectCode(store.putImage({ ...img, sha256: makeImage("b").sha256 }), "INVALID_INPUT");
        expect(await store.getImage(img.sha256)).toBeNull();
      });

      it("deletes images only when no remaining case refers to them", async () => {
        const shared = makeImage("shared");
        const own = makeImage("own");
        await store.putImage(shared);
        await store.putImage(own);
        await store.createCase(makeNewCase("img-a", {}, [shared, own]));
        await store.createCase(makeNewCase("img-b", {}, [shared]));
        expect((await store.getCase("img-a"))?.input.images.map((i) => i.sha256)).toEqual([shared.sha256, own.sha256]);

        expect(await store.deleteCase("img-a")).toBe(true);
        expect(await store.getImage(own.sha256)).toBeNull();
        expect((await store.getImage(shared.sha256))?.data).toBe(shared.data);

        expect(await store.deleteCase("img-b")).toBe(true);
        expect(await store.getImage(shared.sha256)).toBeNull();
      });

      it("refuses a case that refers to an image never stored", async () => {
        await expectCode(store.createCase(makeNewCase("no-img", {}, [makeImage("missing")])), "STORE_FAILED");
        expect(await store.getCase("no-img")).toBeNull();
      });
    });

    describe("deleteCase", () => {
      it("removes the case and its events, and returns false when absent", async () => {
        await store.createCase(makeNewCase("gone", { idempotencyKey: "g" }));
        await store.createCase(makeNewCase("kept"));
        await store.appendEvent("gone", "status", { status: "running" });
        await store.appendEvent("kept", "status", { status: "running" });
        expect(await store.deleteCase("gone")).toBe(true);
        expect(await store.getCase("gone")).toBeNull();
        expect(await store.findByIdempotencyKey("owner-a", "g")).toBeNull();
        expect(await store.listEvents("gone")).toEqual([]);
        expect((await store.listEvents("kept")).map((e) => e.seq)).toEqual([1]);
        expect(await store.deleteCase("gone")).toBe(false);
        expect(await store.deleteCase("never")).toBe(false);
        // The id is free again, and its event numbering starts over.
        await store.createCase(makeNewCase("gone"));
        expect((await store.appendEvent("gone", "status", {})).seq).toBe(1);
      });
    });
  });
}
