/**
 * Conformance for the token-ledger role: a single-use token id is accepted once across every store
 * object until it expires.
 */
import { describe, expect, it } from "vitest";
import type { CaseStore } from "../../../../src/server/store/case-store.js";
import { freshStoreEach, type StoreHarness } from "./fixtures.js";

export function describeTokenLedgerConformance(name: string, makeStore: () => Promise<StoreHarness>): void {
  describe(`CaseStore conformance (token ledger): ${name}`, () => {
    let h!: StoreHarness;
    let store!: CaseStore;
    freshStoreEach(makeStore, (fresh) => ((h = fresh), (store = fresh.store)));

    describe("used token ids", () => {
      const now = 1_800_000_000_000;

      it("a token id is usable once until it expires, per issuer, and another store object sees the use", async () => {
        expect(await store.useTokenId("https://ehr-a", "jti-1", now + 60_000, now)).toBe(true);
        expect(await store.useTokenId("https://ehr-a", "jti-1", now + 60_000, now + 1)).toBe(false);
        expect(await store.useTokenId("https://ehr-b", "jti-1", now + 60_000, now)).toBe(true);
        const other = await h.reopen();
        expect(await other.useTokenId("https://ehr-a", "jti-1", now + 60_000, now + 2)).toBe(false);
        expect(await other.useTokenId("https://ehr-a", "jti-2", now + 60_000, now + 2)).toBe(true);
      });

      it("an expired record is pruned, so the id is free again after its expiry and not before", async () => {
        expect(await store.useTokenId("iss", "short", now + 1_000, now)).toBe(true);
        expect(await store.useTokenId("iss", "short", now + 5_000, now + 999)).toBe(false);
        expect(await store.useTokenId("iss", "short", now + 5_000, now + 1_000)).toBe(true);
        expect(await store.useTokenId("iss", "short", now + 5_000, now + 4_999)).toBe(false);
      });

      it("of many concurrent uses of one id across two store objects, exactly one succeeds", async () => {
        const other = await h.reopen();
        const tries = Array.from({ length: 12 }, (_, i) => (i % 2 ? other : store).useTokenId("iss", "raced", now + 60_000, now));
        const results = await Promise.all(tries);
        expect(results.filter(Boolean)).toHaveLength(1);
      });
    });
  });
}
