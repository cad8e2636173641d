/**
 * Conformance for the workflow-checkpoints role: the LangGraph checkpointer in the same backend,
 * and pruning a case's checkpoints.
 */
import { describe, expect, it } from "vitest";
import { Annotation, END, START, StateGraph } from "@langchain/langgraph";
import type { CaseStore } from "../../../../src/server/store/case-store.js";
import { freshStoreEach, type StoreHarness, makeNewCase, makeResult } from "./fixtures.js";

export function describeWorkflowCheckpointsConformance(name: string, makeStore: () => Promise<StoreHarness>): void {
  describe(`CaseStore conformance (workflow checkpoints): ${name}`, () => {
    let h!: StoreHarness;
    let store!: CaseStore;
    freshStoreEach(makeStore, (fresh) => ((h = fresh), (store = fresh.store)));

    describe("checkpointer", () => {
      const Counter = Annotation.Root({
        count: Annotation<number>({ reducer: (a, b) => a + b, default: () => 0 }),
      });

      it("persists LangGraph checkpoints under the case id and deleteCase removes them", async () => {
        const graph = new StateGraph(Counter)
          .addNode("one", async () => ({ count: 1 }))
          .addNode("two", async () => ({ count: 10 }))
          .addEdge(START, "one")
          .addEdge("one", "two")
          .addEdge("two", END)
          .compile({ checkpointer: store.checkpointer() });
        await store.createCase(makeNewCase("cp"));
        await store.createCase(makeNewCase("cp-other"));
        const cfg = { configurable: { thread_id: "cp" } };
        const otherCfg = { configurable: { thread_id: "cp-other" } };
        expect(await graph.invoke({ count: 100 }, cfg)).toEqual({ count: 111 });
        await graph.invoke({ count: 5 }, otherCfg);

        const state = await graph.getState(cfg);
        expect(state.values).toEqual({ count: 111 });
        expect(state.next).toEqual([]);

        // Another store object on the same location sees the same checkpoints.
        const second = await h.reopen();
        expect((await second.checkpointer().getTuple(cfg))?.checkpoint.channel_values).toMatchObject({ count: 111 });

        expect(await store.deleteCase("cp")).toBe(true);
        expect(await store.checkpointer().getTuple(cfg)).toBeUndefined();
        expect(await second.checkpointer().getTuple(cfg)).toBeUndefined();
        const history = [];
        for await (const t of store.checkpointer().list(cfg)) history.push(t);
        expect(history).toEqual([]);
        expect((await graph.getState(otherCfg)).values).toEqual({ count: 16 });
      });

      it("pruneCheckpoints drops one case's checkpoints and keeps the case and the others", async () => {
        const graph = new StateGraph(Counter)
          .addNode("one", async () => ({ count: 1 }))
          .addEdge(START, "one")
          .addEdge("one", END)
          .compile({ checkpointer: store.checkpointer() });
        await store.createCase(makeNewCase("pr"));
        await store.createCase(makeNewCase("pr-other"));
        const cfg = { configurable: { thread_id: "pr" } };
        const otherCfg = { configurable: { thread_id: "pr-other" } };
        await graph.invoke({ count: 1 }, cfg);
        await graph.invoke({ count: 2 }, otherCfg);
        await store.saveResult("pr", makeResult("pr"), null);

        await store.pruneCheckpoints("pr");
        expect(await store.checkpointer().getTuple(cfg)).toBeUndefined();
        const history = [];
        for await (const t of store.checkpointer().list(cfg)) history.push(t);
        expect(history).toEqual([]);
        expect((await store.getCase("pr"))?.status).toBe("completed");
        expect((await graph.getState(otherCfg)).values).toEqual({ count: 3 });
        // Pruning a case without checkpoints, or twice, is harmless.
        await store.pruneCheckpoints("pr");
        await store.pruneCheckpoints("never-existed");
      });
    });
  });
}
