import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { untilCheckpointed } from "../../support/checkpoint-writes.js";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import { startScriptedOpenAI, type ScriptedOpenAI } from "../../../src/scripted/scripted-openai-server.js";
import { chestPain, json, startTestServer, until, withDelays, type TestServer } from "./http-harness.js";
import { SCRIPTED_MODEL_PROFILES } from "../../../src/scripted/scripted-config.js";

/** Text-doctor's first call is slow, so a case sits mid-flight after its rollouts are done. */
const slowEvidence = () => withDelays(clinicalScenario({ rolloutAnswers: ["B", "B", "A"] }), { "text-doctor": (req) => (req.callIndex === 0 ? 4_000 : 0) });

async function caseStatus(t: TestServer, id: string): Promise<string> {
  return (await json<{ status: string }>(await t.api(`/cases/${id}`))).status;
}

describe("cancellation", () => {
  let t: TestServer;
  beforeAll(async () => {
    // The scripted models' profiles are stated, as an operator would for models the catalog does not know: no first
    // call goes alone (model-adaptation.ts), so every call of the case is in flight, and unanswered, when it is deleted.
    t = await startTestServer({ env: { MEDMMV_MODEL_PROFILES: SCRIPTED_MODEL_PROFILES } });
  });
  afterAll(() => t.close());

  it("DELETE of a running case aborts its in-flight model calls and purges it", async () => {
    t.openai.reset();
    // Every call is held open until its client leaves: only the DELETE can end them, however slow the machine.
    t.openai.addFault({ kind: "hold" });
    try {
      const res = await t.api("/diagnose", { method: "POST", json: chestPain(), headers: { prefer: "respond-async" } });
      expect(res.status).toBe(202);
      const { caseId } = await json<{ caseId: string }>(res);
      await until(() => (t.openai.stats().held >= 3 ? true : undefined), 30_000, "calls held in flight");
      const started = Date.now();
      const del = await t.api(`/cases/${caseId}`, { method: "DELETE" });
      expect(del.status).toBe(204);
      // Well before the service would give up waiting for the run to unwind (10 s): the calls were cut, not awaited.
      expect(Date.now() - started).toBeLessThan(4_000);
      await until(() => (t.openai.stats().inFlight === 0 ? true : undefined), 10_000, "connections closed");
      const stats = t.openai.stats();
      expect(stats.disconnects).toBeGreaterThanOrEqual(3);
      expect(stats.log.every((c) => c.status === 0)).toBe(true); // none was answered
      expect((await t.api(`/cases/${caseId}`)).status).toBe(404);
      // Nothing new is started for the purged case: its run ends without another call.
      const calls = stats.total;
      await until(() => (t.server.service.isRunning(caseId) ? undefined : true), 5_000, "the purged case's run to end");
      expect(t.openai.stats().total).toBe(calls);
    } finally {
      t.openai.clearFaults();
      t.openai.releaseHeld("drop");
    }
  });

  it("a client that disconnects from a synchronous POST does not cancel the case", async () => {
    t.openai.reset();
    t.openai.setLatency(150);
    try {
      const ac = new AbortController();
      const pending = t.api("/diagnose", { method: "POST", json: chestPain(), signal: ac.signal }).catch((e: unknown) => e);
      await until(() => (t.openai.stats().total >= 1 ? true : undefined), 5_000, "first model call");
      ac.abort();
      expect(await pending).toBeInstanceOf(Error);
      const list = await json<{ items: { caseId: string; status: string }[] }>(await t.api("/cases?limit=1"));
      const id = list.items[0]!.caseId;
      const status = await until(async () => {
        const s = await caseStatus(t, id);
        return s === "completed" ? s : undefined;
      }, 15_000, "case to complete");
      expect(status).toBe("completed");
      expect(t.openai.stats().disconnects).toBe(0);
    } finally {
      t.openai.setLatency(0);
    }
  });
});

describe("graceful shutdown", () => {
  let openai: ScriptedOpenAI;
  let dataDir: string;
  beforeAll(async () => {
    openai = await startScriptedOpenAI({ scenario: slowEvidence() });
    dataDir = await mkdtemp(path.join(tmpdir(), "medmmv-shutdown-"));
  });
  afterAll(async () => {
    await openai.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it("stops at once, keeps the in-flight case checkpointed, and the next start finishes it without redoing rollouts", async () => {
    const first = await startTestServer({ openai, dataDir });
    const res = await first.api("/diagnose", { method: "POST", json: chestPain(), headers: { prefer: "respond-async" } });
    const { caseId } = await json<{ caseId: string }>(res);
    await until(() => (openai.stats().log.filter((c) => c.agent === "rollout" && c.end !== null).length === 3 ? true : undefined), 5_000, "rollouts");
    const progress = await until(async () => {
      const v = await json<{ progress: { step: string; done: number; total: number } | null }>(await first.api(`/cases/${caseId}`));
      return v.progress && v.progress.done === 3 ? v.progress : undefined;
    }, 5_000, "progress");
    expect(progress).toEqual({ step: "rollouts-and-evidence", done: 3, total: 4 }); // 3 rollouts + text-doctor
    // The finished rollouts' task writes reach the checkpointer after their events: wait for them.
    await untilCheckpointed(first.server.store.checkpointer(), caseId, "rollouts", 3);

    const stopping = Date.now();
    await first.close();
    expect(Date.now() - stopping).toBeLessThan(3_000); // did not wait for the slow text-doctor
    await until(() => (openai.stats().disconnects >= 1 ? true : undefined), 2_000, "the slow call to be cut");
    expect(first.logs.text()).toContain("resumes at the next start");

    const second = await startTestServer({ openai, dataDir });
    try {
      const done = await until(async () => {
        const v = await json<{ status: string; result: { status: string; usage: { byAgent: Record<string, { calls: number }> } } | null }>(await second.api(`/cases/${caseId}`));
        return v.status === "completed" ? v : undefined;
      }, 15_000, "resumed case");
      expect(done.result!.status).toBe("completed");
      expect(openai.stats().byAgent.rollout).toBe(3); // completed rollouts were not called again
      expect(openai.stats().byAgent["text-doctor"]).toBe(2); // the interrupted one was
      const events = await second.server.service.events(caseId);
      expect(events.filter((e) => e.type === "rollout")).toHaveLength(3);
      expect(events.some((e) => e.type === "status" && e.data.resumed === true)).toBe(true);
      expect(events.at(-1)!.type).toBe("final");
    } finally {
      await second.close();
    }
  });
});
