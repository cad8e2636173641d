/**
 * Conformance for the response-cache-store role: model responses stored and read back by key.
 */
import { describe, expect, it } from "vitest";
import type { CaseStore } from "../../../../src/server/store/case-store.js";
import { freshStoreEach, type StoreHarness, ISO } from "./fixtures.js";

export function describeResponseCacheStoreConformance(name: string, makeStore: () => Promise<StoreHarness>): void {
  describe(`CaseStore conformance (response cache store): ${name}`, () => {
    let store!: CaseStore;
    freshStoreEach(makeStore, (fresh) => (store = fresh.store));

    describe("response cache", () => {
      it("gets what was put, and keeps the first value when a key is put twice", async () => {
        expect(await store.getCachedResponse("k")).toBeNull();
        const value = { message: { role: "assistant", content: "B" }, usage: { prompt_tokens: 10, completion_tokens: 2 } };
        await store.putCachedResponse("k", value);
        await store.putCachedResponse("k", { message: { content: "different" } });
        const got = await store.getCachedResponse("k");
        expect(got?.value).toEqual(value);
        expect(got?.createdAt).toMatch(ISO);
        expect(await store.getCachedResponse("other")).toBeNull();
      });
    });
  });
}
