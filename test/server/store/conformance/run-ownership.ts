/**
 * Conformance for the run-ownership role: claiming, renewing, releasing and taking over case
 * leases, with several processes on one store.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { CaseStore } from "../../../../src/server/store/case-store.js";
import { type StoreHarness, makeNewCase, makeResult } from "./fixtures.js";

export function describeRunOwnershipConformance(name: string, makeStore: () => Promise<StoreHarness>): void {
  describe(`CaseStore conformance (run ownership): ${name}`, () => {
    let h: StoreHarness;
    let store: CaseStore;
    beforeEach(async () => {
      h = await makeStore();
      store = h.store;
    });
    afterEach(async () => {
      await h.dispose();
    });

    describe("leases (several processes on one store)", () => {
      const T = 1_000_000;
      const lease = (runner: string, expiresAtMs: number) => ({ runner, expiresAtMs });

      it("a case created with a lease is held by its creator until the lease expires", async () => {
        await store.createCase(makeNewCase("ls-1", { lease: lease("A", T + 30_000) }));
        expect(await store.listUnfinishedLeases()).toEqual([{ id: "ls-1", runner: "A", expiresAtMs: T + 30_000 }]);
        expect(await store.claimCase("ls-1", lease("B", T + 60_000), T + 29_999)).toBe(false);
        // The holder may claim again (a resume in the same process).
        expect(await store.claimCase("ls-1", lease("A", T + 40_000), T + 29_999)).toBe(true);
        expect(await store.claimCase("ls-1", lease("B", T + 90_000), T + 40_001)).toBe(true);
        expect(await store.listUnfinishedLeases()).toEqual([{ id: "ls-1", runner: "B", expiresAtMs: T + 90_000 }]);
        // Exactly one of two racing claims wins.
        const race = await Promise.all([store.claimCase("ls-1", lease("C", T + 200_000), T + 100_000), store.claimCase("ls-1", lease("D", T + 200_000), T + 100_000)]);
        expect(race.filter(Boolean)).toHaveLength(1);
      });

      it("a case without a holder is claimable at once; a runner known to be dead can be taken over before expiry", async () => {
        await store.createCase(makeNewCase("ls-free"));
        expect(await store.listUnfinishedLeases()).toEqual([{ id: "ls-free", runner: null, expiresAtMs: null }]);
        expect(await store.claimCase("ls-free", lease("A", T + 30_000), T)).toBe(true);
        expect(await store.claimCase("ls-free", lease("B", T + 30_000), T + 1, "someone-else")).toBe(false);
        expect(await store.claimCase("ls-free", lease("B", T + 30_000), T + 1, "A")).toBe(true);
      });

      it("renewLeases extends the holder's leases and names the ones it lost", async () => {
        await store.createCase(makeNewCase("ls-r1", { lease: lease("A", T + 10) }));
        await store.createCase(makeNewCase("ls-r2", { lease: lease("A", T + 10) }));
        await store.createCase(makeNewCase("ls-r3", { lease: lease("A", T + 10) }));
        expect(await store.claimCase("ls-r2", lease("B", T + 50_000), T + 20)).toBe(true);
        await store.deleteCase("ls-r3");
        expect(await store.renewLeases("A", ["ls-r1", "ls-r2", "ls-r3"], T + 60_000)).toEqual(["ls-r2", "ls-r3"]);
        expect(await store.renewLeases("A", [], T)).toEqual([]);
        expect(await store.claimCase("ls-r1", lease("B", T + 70_000), T + 30_000)).toBe(false);
      });

      it("releaseLeases frees the holder's own cases only; finished cases are never claimable", async () => {
        await store.createCase(makeNewCase("ls-x", { lease: lease("A", T + 60_000) }));
        await store.createCase(makeNewCase("ls-y", { lease: lease("B", T + 60_000) }));
        await store.releaseLeases("A", ["ls-x", "ls-y"]);
        expect(await store.listUnfinishedLeases()).toEqual([
          { id: "ls-x", runner: null, expiresAtMs: null },
          { id: "ls-y", runner: "B", expiresAtMs: T + 60_000 },
        ]);
        await store.saveResult("ls-x", makeResult("ls-x"), null);
        expect(await store.claimCase("ls-x", lease("C", T + 60_000), T)).toBe(false);
        expect(await store.claimCase("missing", lease("C", T + 60_000), T)).toBe(false);
        expect((await store.listUnfinishedLeases()).map((l) => l.id)).toEqual(["ls-y"]);
      });
    });
  });
}
