/**
 * Conformance for the conversation-turns role: numbered follow-up turns of a case, in order,
 * without duplicates.
 */
import { describe, expect, it } from "vitest";
import type { CaseStore, NewTurn } from "../../../../src/server/store/case-store.js";
import { freshStoreEach, type StoreHarness, makeNewCase, expectCode } from "./fixtures.js";

export function describeConversationTurnsConformance(name: string, makeStore: () => Promise<StoreHarness>): void {
  describe(`CaseStore conformance (conversation turns): ${name}`, () => {
    let h!: StoreHarness;
    let store!: CaseStore;
    freshStoreEach(makeStore, (fresh) => ((h = fresh), (store = fresh.store)));

    describe("conversation turns", () => {
      const turn = (n: number, over: Partial<NewTurn> = {}): NewTurn => ({
        turn: n,
        question: `Question ${n} — “naïve” 漢字`,
        answer: `Answer ${n} with "quotes" and \\ backslash`,
        step: n === 1 ? "image-quality" : null,
        category: n === 1 ? "high" : null,
        contextConflict: n === 3,
        evidence: [{ id: "f:0123456789ab", label: "effusion" }],
        details: { hd: { hallucinationDetected: false }, nested: [1, null, "x"] },
        ...over,
      });

      it("stores turns in order, round-trips every field, and lists none for a case without turns", async () => {
        await store.createCase(makeNewCase("conv"));
        expect(await store.listTurns("conv")).toEqual([]);
        const t2 = await store.addTurn("conv", turn(2));
        const t1 = await store.addTurn("conv", turn(1));
        await store.addTurn("conv", turn(3));
        const listed = await store.listTurns("conv");
        expect(listed.map((t) => t.turn)).toEqual([1, 2, 3]);
        expect(listed[0]).toEqual(t1);
        expect(listed[1]).toEqual(t2);
        expect(listed[0]).toMatchObject({ caseId: "conv", ...turn(1) });
        expect(listed[2]!.contextConflict).toBe(true);
        expect(Number.isNaN(Date.parse(listed[0]!.at))).toBe(false);
      });

      it("the same turn number twice is CONFLICT; a missing case is NOT_FOUND", async () => {
        await store.createCase(makeNewCase("conv-dup"));
        await store.addTurn("conv-dup", turn(1));
        await expectCode(store.addTurn("conv-dup", turn(1, { answer: "other" })), "CONFLICT");
        expect((await store.listTurns("conv-dup")).map((t) => t.answer)).toEqual([turn(1).answer]);
        await expectCode(store.addTurn("no-such-case", turn(1)), "NOT_FOUND");
        expect(await store.listTurns("no-such-case")).toEqual([]);
      });

      it("turns are seen by another store object and go with their case", async () => {
        await store.createCase(makeNewCase("conv-del"));
        await store.addTurn("conv-del", turn(1));
        const other = await h.reopen();
        expect((await other.listTurns("conv-del")).map((t) => t.question)).toEqual([turn(1).question]);
        expect(await store.deleteCase("conv-del")).toBe(true);
        expect(await other.listTurns("conv-del")).toEqual([]);
      });
    });
  });
}
