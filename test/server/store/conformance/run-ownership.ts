/**
 * Conformance for the run-ownership role: the unfinished cases' ids and the count of run
 * starts the crash quarantine reads, with several callers racing on one store.
 */
import { describe, expect, it } from "vitest";
import type { CaseStore } from "../../../../src/server/store/case-store.js";
import { freshStoreEach, type StoreHarness, makeNewCase, makeResult } from "./fixtures.js";

export function describeRunOwnershipConformance(name: string, makeStore: () => Promise<StoreHarness>): void {
  describe(`CaseStore conformance (run ownership): ${name}`, () => {
    let store!: CaseStore;
    freshStoreEach(makeStore, (fresh) => (store = fresh.store));

    it("lists the unfinished cases' ids oldest first, and only those", async () => {
      await store.createCase(makeNewCase("ro-1"));
      await store.createCase(makeNewCase("ro-2"));
      await store.createCase(makeNewCase("ro-3"));
      await store.saveResult("ro-2", makeResult("ro-2"), null);
      await store.setStatus("ro-3", "running");
      expect(await store.listUnfinishedIds()).toEqual(["ro-1", "ro-3"]);
    });

    it("counts each start of a case's run, atomically under racing callers", async () => {
      await store.createCase(makeNewCase("ro-c"));
      expect(await store.countRunStart("ro-c")).toBe(1);
      const raced = await Promise.all([store.countRunStart("ro-c"), store.countRunStart("ro-c"), store.countRunStart("ro-c")]);
      expect([...raced].sort()).toEqual([2, 3, 4]);
    });

    it("takes back a start (a graceful stop), never below zero", async () => {
      await store.createCase(makeNewCase("ro-u"));
      await store.countRunStart("ro-u");
      await store.uncountRunStart("ro-u");
      await store.uncountRunStart("ro-u");
      expect(await store.countRunStart("ro-u")).toBe(1);
    });

    it("a finished or missing case has no count: null", async () => {
      await store.createCase(makeNewCase("ro-f"));
      await store.saveResult("ro-f", makeResult("ro-f"), null);
      expect(await store.countRunStart("ro-f")).toBeNull();
      expect(await store.countRunStart("missing")).toBeNull();
      await store.uncountRunStart("missing");
    });
  });
}
