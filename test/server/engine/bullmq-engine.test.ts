import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { prepareCase } from "../../../src/core/intake/case-intake.js";
import { pipelineOptions } from "../../../src/core/workflow/pipeline.js";
import { toStoredInput } from "../../../src/server/service/stored-case.js";
import { SqliteStore } from "../../../src/server/store/sqlite-store.js";
import { scriptedConfig } from "../../../src/scripted/scripted-config.js";
import { afterAll, describe, expect, it } from "vitest";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import { startScriptedOpenAI, type ScriptedOpenAI } from "../../../src/scripted/scripted-openai-server.js";
import { chestPain, startTestServer, until, type TestServer } from "../http/http-harness.js";
import { TEST_REDIS_URL, redisPrefix } from "../../support/redis-prefix.js";
import { recordPaidCalls } from "../../support/paid-calls.js";

/**
 * The BullMQ engine with three replicas in one test process (one store file, one Redis):
 * each case runs once on one of them, an SSE client on one replica follows a case another
 * runs, DELETE on one replica stops the calls of the replica running the case, and a Redis
 * that lost its data loses no case (the reconciler queues it again).
 */
const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

async function replicas(openai: ScriptedOpenAI, n: number, extra: Record<string, string> = {}, o: { heartbeatMs?: number } = {}): Promise<{ servers: TestServer[]; prefix: string }> {
  const dataDir = await mkdtemp(path.join(tmpdir(), "medmmv-bullmq-"));
  dirs.push(dataDir);
  const prefix = redisPrefix("engine");
  const env = { REDIS_URL: TEST_REDIS_URL, MEDMMV_REDIS_PREFIX: prefix, MEDMMV_ENGINE_LOCK_MS: "2000", MEDMMV_RECONCILE_MS: "2000", MEDMMV_RATE_LIMIT_PER_MIN: "100000", ...extra };
  const servers: TestServer[] = [];
  for (let i = 0; i < n; i++) servers.push(await startTestServer({ dataDir, openai, env, ...o }));
  return { servers, prefix };
}

const terminal = (s: string) => ["completed", "abstained", "failed"].includes(s);

async function submit(s: TestServer, question: string): Promise<string> {
  const res = await s.api("/diagnose", { method: "POST", json: chestPain({ question }), headers: { prefer: "respond-async" } });
  expect(res.status).toBe(202);
  return ((await res.json()) as { caseId: string }).caseId;
}

async function waitDone(s: TestServer, ids: string[]): Promise<void> {
  await until(async () => {
    const all = await Promise.all(ids.map((id) => s.server.store.getCase(id)));
    return all.every((c) => c && terminal(c.status)) ? true : undefined;
  }, 60_000, "the cases to finish");
}

describe("BullMQ engine, three replicas", () => {
  it("each accepted case runs exactly once, on some replica; an SSE client on another replica is pushed its events as they happen", async () => {
    const openai = await startScriptedOpenAI({ scenario: clinicalScenario({ rolloutAnswers: ["B", "B", "A"] }), latencyMs: 40 });
    // A heartbeat no test outlives: a stream whose case runs elsewhere could learn of the case's end only at a
    // heartbeat (it then reads the store), so every event the watcher gets below was pushed (Redis pub/sub).
    const { servers } = await replicas(openai, 3, { MEDMMV_ENGINE_CONCURRENCY: "2" }, { heartbeatMs: 3_600_000 });
    try {
      // The first case's first rollout waits for the test: it is running, on some replica, when the watcher connects.
      openai.addFault({ kind: "hold", agent: "rollout", times: 1 });
      const first = await submit(servers[0]!, "Which diagnosis fits case 0?");
      await until(async () => (openai.stats().held === 1 ? true : undefined), 30_000, "the first rollout held");
      const runner = await until(async () => servers.findIndex((s) => s.server.service.isRunning(first)) + 1 || undefined, 30_000, "the replica running the case");
      // Follow it from a replica that does not run it.
      const watcher = servers[runner % servers.length]!;
      expect(watcher.server.service.isRunning(first)).toBe(false);
      const res = await watcher.api(`/cases/${first}/events`);
      expect(res.status).toBe(200);
      const connectedAt = Date.now();
      expect(openai.releaseHeld("answer")).toBe(1);
      const ids = [first];
      for (let i = 1; i < 6; i++) ids.push(await submit(servers[0]!, `Which diagnosis fits case ${i}?`));
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      const created: number[] = [];
      let text = "";
      while (!/event: final/.test(text)) {
        const chunk = await reader.read();
        if (chunk.done) break;
        const piece = decoder.decode(chunk.value, { stream: true });
        text += piece;
        for (const m of piece.matchAll(/^data: (.+)$/gm)) created.push(Date.parse((JSON.parse(m[1]!) as { at: string }).at));
      }
      await reader.cancel().catch(() => undefined);
      // The stream ran to the end of a case another replica ran, with no heartbeat to read the store at:
      // events made after the watcher connected reached it, the final one included.
      expect(text).toMatch(/event: final/);
      expect(created.filter((at) => at >= connectedAt).length).toBeGreaterThan(1);
      await waitDone(servers[0]!, ids);
      const store = servers[0]!.server.store;
      for (const id of ids) {
        const events = await store.listEvents(id);
        expect(events.filter((e) => e.type === "final"), `final events of ${id}`).toHaveLength(1);
        expect(events.filter((e) => e.type === "status" && e.data.status === "running"), `runs of ${id}`).toHaveLength(1);
      }
      expect(openai.stats().byAgent.rollout).toBe(3 * ids.length);
      // Work spread over replicas (two cases at a time each, six cases).
      const ran = servers.map((s) => s.logs.lines().filter((l) => l.msg === "case finished").length);
      expect(ran.reduce((a, b) => a + b, 0)).toBe(ids.length);
      expect(ran.filter((n) => n > 0).length).toBeGreaterThan(1);
    } finally {
      for (const s of servers) await s.close();
      await openai.close();
    }
  }, 120_000);

  it("DELETE on one replica stops the calls of the replica running the case", async () => {
    // Each call noted with the case it belongs to, as it reaches the provider.
    const paid = recordPaidCalls(clinicalScenario({ rolloutAnswers: ["B", "B", "A"] }), (req) => /fits the (deleted|later) case/.exec(req.text)?.[1] ?? null);
    const openai = await startScriptedOpenAI({ scenario: paid.scenario, latencyMs: 300 });
    const { servers } = await replicas(openai, 2);
    try {
      const id = await submit(servers[0]!, "Which diagnosis fits the deleted case?");
      await until(async () => (openai.stats().log.length > 0 ? true : undefined), 30_000, "the first model call");
      const runner = servers.find((s) => s.server.service.isRunning(id));
      expect(runner).toBeDefined();
      const other = servers.find((s) => s !== runner)!;
      const del = await other.api(`/cases/${id}`, { method: "DELETE" });
      expect(del.status).toBe(204);
      await until(async () => (!runner!.server.service.isRunning(id) ? true : undefined), 10_000, "the run to stop on its replica");
      const stoppedAt = Date.now();
      // A whole later case of model calls is the window in which a run still going would have called again.
      const later = await submit(other, "Which diagnosis fits the later case?");
      await waitDone(other, [later]);
      expect(paid.calls.filter((c) => c.caseTag === "later").length).toBeGreaterThan(0);
      expect(paid.calls.filter((c) => c.caseTag === "deleted" && c.at > stoppedAt), "calls of the deleted case after its run stopped").toEqual([]);
      expect(await runner!.server.store.getCase(id)).toBeNull();
    } finally {
      for (const s of servers) await s.close();
      await openai.close();
    }
  }, 60_000);

  it("a Redis that lost the queue loses no case: the reconciler queues the unfinished cases again", async () => {
    const openai = await startScriptedOpenAI({ scenario: clinicalScenario({ rolloutAnswers: ["B", "B", "A"] }), latencyMs: 40 });
    const dataDir = await mkdtemp(path.join(tmpdir(), "medmmv-bullmq-lost-"));
    dirs.push(dataDir);
    // Cases committed to the store whose jobs Redis no longer has (it restarted without persistence).
    const cfg = scriptedConfig(openai.baseUrl, { MEDMMV_K: "3", MEDMMV_MAX_REPAIRS: "1" });
    const store = new SqliteStore({ dataDir });
    await store.init();
    const ids: string[] = [];
    for (const [i, c] of [chestPain(), chestPain({ question: "Which diagnosis fits best?" })].entries()) {
      const prepared = await prepareCase(c, { maxBytes: 1e6, maxPixels: 1e7, allowPath: false });
      const id = `forgotten-${i}`;
      await store.createCase({ id, owner: "someone", input: { ...toStoredInput(prepared), id }, options: pipelineOptions(cfg) as unknown as Record<string, unknown> });
      ids.push(id);
    }
    await store.close();
    const env = { REDIS_URL: TEST_REDIS_URL, MEDMMV_REDIS_PREFIX: redisPrefix("lost"), MEDMMV_ENGINE_LOCK_MS: "1000", MEDMMV_RECONCILE_MS: "1000" };
    const s = await startTestServer({ dataDir, openai, env });
    try {
      await waitDone(s, ids);
      for (const id of ids) expect((await s.server.store.getCase(id))?.status).toBe("completed");
      expect(s.logs.lines().some((l) => l.msg === "queued again unfinished cases the queue did not know")).toBe(true);
      expect(openai.stats().byAgent.rollout).toBe(3 * ids.length);
    } finally {
      await s.close();
      await openai.close();
    }
  }, 60_000);
});
