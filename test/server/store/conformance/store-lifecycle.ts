/**
 * Conformance for what the CaseStore composition itself adds to the roles: init, close and ping,
 * and data surviving a close and reopen or shared with a second store object on the same location.
 */
import { describe, expect, it } from "vitest";
import type { CaseStore } from "../../../../src/server/store/case-store.js";
import { freshStoreEach, type StoreHarness, makeImage, makeNewCase, makeResult, expectCode } from "./fixtures.js";

export function describeStoreLifecycleConformance(name: string, makeStore: () => Promise<StoreHarness>): void {
  describe(`CaseStore conformance (store lifecycle): ${name}`, () => {
    let h!: StoreHarness;
    let store!: CaseStore;
    freshStoreEach(makeStore, (fresh) => ((h = fresh), (store = fresh.store)));

    describe("lifecycle", () => {
      it("keeps everything across close and reopen", async () => {
        const img = makeImage("durable");
        await store.putImage(img);
        await store.createCase(makeNewCase("dur", { idempotencyKey: "dk" }, [img]));
        await store.appendEvent("dur", "status", { status: "running" });
        await store.saveResult("dur", makeResult("dur"), { nodes: [], edges: [] });
        await store.putCachedResponse("ck", { v: 1 });
        const before = await store.getCase("dur");
        await store.close();

        const again = await h.reopen();
        expect(await again.getCase("dur")).toEqual(before);
        expect((await again.findByIdempotencyKey("owner-a", "dk"))?.id).toBe("dur");
        expect((await again.listEvents("dur")).map((e) => [e.seq, e.type])).toEqual([[1, "status"]]);
        expect((await again.appendEvent("dur", "final", {})).seq).toBe(2);
        expect((await again.getImage(img.sha256))?.data).toBe(img.data);
        expect((await again.getCachedResponse("ck"))?.value).toEqual({ v: 1 });
      });

      it("pings while open; close is idempotent and later calls fail with STORE_FAILED", async () => {
        await expect(store.ping()).resolves.toBeUndefined();
        await store.close();
        await store.close();
        await expectCode(store.ping(), "STORE_FAILED");
        await expectCode(store.getCase("x"), "STORE_FAILED");
      });

      it("init is idempotent on an already initialised location", async () => {
        await store.createCase(makeNewCase("keep"));
        await store.init();
        const other = await h.reopen();
        await other.init();
        expect((await other.getCase("keep"))?.id).toBe("keep");
      });

      it("sees writes from another store object on the same location", async () => {
        const other = await h.reopen();
        await store.createCase(makeNewCase("shared-1"));
        await other.appendEvent("shared-1", "status", { from: "other" });
        await store.appendEvent("shared-1", "status", { from: "first" });
        expect((await other.listEvents("shared-1")).map((e) => [e.seq, e.data])).toEqual([
          [1, { from: "other" }],
          [2, { from: "first" }],
        ]);
      });
    });
  });
}
