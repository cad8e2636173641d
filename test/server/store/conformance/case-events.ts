/**
 * Conformance for the case-events role: the per-case event history with its store-assigned
 * sequence numbers, which SSE replay relies on.
 */
import { describe, expect, it } from "vitest";
import type { CaseStore } from "../../../../src/server/store/case-store.js";
import { freshStoreEach, type StoreHarness, makeNewCase, ISO } from "./fixtures.js";

export function describeCaseEventsConformance(name: string, makeStore: () => Promise<StoreHarness>): void {
  describe(`CaseStore conformance (case events): ${name}`, () => {
    let store!: CaseStore;
    freshStoreEach(makeStore, (fresh) => (store = fresh.store));

    describe("events", () => {
      it("numbers events 1, 2, 3… per case and lists those after a given seq", async () => {
        await store.createCase(makeNewCase("ev"));
        await store.createCase(makeNewCase("ev-other"));
        const e1 = await store.appendEvent("ev", "status", { status: "running" });
        const e2 = await store.appendEvent("ev", "rollout", { index: 0, answer: "B", nested: { ok: [true, 1.5] } });
        const o1 = await store.appendEvent("ev-other", "status", { status: "running" });
        const e3 = await store.appendEvent("ev", "final", {});
        expect([e1.seq, e2.seq, e3.seq, o1.seq]).toEqual([1, 2, 3, 1]);
        expect(e2).toMatchObject({ caseId: "ev", type: "rollout", data: { index: 0, answer: "B", nested: { ok: [true, 1.5] } } });
        expect(e2.at).toMatch(ISO);

        const all = await store.listEvents("ev");
        expect(all).toEqual([e1, e2, e3]);
        expect(await store.listEvents("ev", 1)).toEqual([e2, e3]);
        expect(await store.listEvents("ev", 3)).toEqual([]);
        expect(await store.listEvents("missing")).toEqual([]);
      });

      it("an event with progress sets the case's progress in the same write; one without leaves it", async () => {
        await store.createCase(makeNewCase("prog"));
        const before = (await store.getCase("prog"))!;
        const e1 = await store.appendEvent("prog", "rollout", { index: 0 }, { step: "rollouts", done: 1, total: 5 });
        expect(e1).toMatchObject({ seq: 1, type: "rollout", data: { index: 0 } });
        const after = (await store.getCase("prog"))!;
        expect(after.progress).toEqual({ step: "rollouts", done: 1, total: 5 });
        expect(Date.parse(after.updatedAt)).toBeGreaterThanOrEqual(Date.parse(before.updatedAt));
        const e2 = await store.appendEvent("prog", "note", {});
        expect(e2.seq).toBe(2);
        expect((await store.getCase("prog"))!.progress).toEqual({ step: "rollouts", done: 1, total: 5 });
        await expect(store.appendEvent("no-such-case", "rollout", {}, { step: "rollouts", done: 1, total: 5 })).rejects.toMatchObject({ code: "NOT_FOUND" });
        expect(await store.listEvents("prog")).toEqual([e1, e2]);
      });

      it("assigns gap-free, unique seqs under 50 concurrent appends", async () => {
        await store.createCase(makeNewCase("burst"));
        const events = await Promise.all(
          Array.from({ length: 50 }, (_, i) => store.appendEvent("burst", "tick", { i })),
        );
        expect(events.map((e) => e.seq).sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
        const listed = await store.listEvents("burst");
        expect(listed.map((e) => e.seq)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
        // Every append is there exactly once, under the seq it was told.
        const bySeq = new Map(events.map((e) => [e.seq, (e.data as { i: number }).i]));
        for (const e of listed) expect((e.data as { i: number }).i).toBe(bySeq.get(e.seq));
      });
    });
  });
}
