import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { prepareCase } from "../../../src/core/intake/case-intake.js";
import { pipelineOptions } from "../../../src/core/workflow/pipeline.js";
import { isDeadOnThisHost, makeRunnerId } from "../../../src/server/service/case-service.js";
import { toStoredInput } from "../../../src/server/service/stored-case.js";
import { SqliteStore } from "../../../src/server/store/sqlite-store.js";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import { startScriptedOpenAI } from "../../../src/scripted/scripted-openai-server.js";
import { scriptedConfig } from "../../../src/scripted/scripted-config.js";
import { chestPain, startTestServer, until, type TestServer } from "../http/http-harness.js";

const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

describe("runner ids", () => {
  it("tell a dead process on this host from a live one, and never call another host's process dead", () => {
    const self = makeRunnerId();
    const [host] = self.split("/");
    expect(isDeadOnThisHost(self, self)).toBe(false);
    // The test runner's parent process is alive.
    expect(isDeadOnThisHost(`${host}/${process.ppid}/abcd`, self)).toBe(false);
    // Our own pid under another runner id: a predecessor of this process (a restarted container).
    expect(isDeadOnThisHost(`${host}/${process.pid}/other`, self)).toBe(true);
    // A pid that cannot exist.
    expect(isDeadOnThisHost(`${host}/2147483646/x`, self)).toBe(true);
    expect(isDeadOnThisHost(`elsewhere/2147483646/x`, self)).toBe(false);
    expect(isDeadOnThisHost("api-1", self)).toBe(false);
  });
});

describe("adopting unfinished cases", () => {
  it("servers looking for orphaned cases at the same moment: each case is claimed and run by exactly one of them", async () => {
    const openai = await startScriptedOpenAI({ scenario: clinicalScenario({ rolloutAnswers: ["B", "B", "A"] }), latencyMs: 20 });
    const dataDir = await mkdtemp(path.join(tmpdir(), "medmmv-adopt-"));
    dirs.push(dataDir);
    const servers: TestServer[] = await Promise.all([0, 1, 2].map(() => startTestServer({ dataDir, openai, env: { MEDMMV_LEASE_MS: "60000" } })));
    // Then three cases appear that a process on another host left behind, its leases expired.
    const cfg = scriptedConfig(openai.baseUrl, { MEDMMV_K: "3", MEDMMV_MAX_REPAIRS: "1" });
    const store = new SqliteStore({ dataDir });
    await store.init();
    const ids: string[] = [];
    for (const [i, c] of [chestPain(), chestPain({ question: "Which diagnosis fits best?" }), chestPain({ question: "What explains the ECG?" })].entries()) {
      const prepared = await prepareCase(c, { maxBytes: 1e6, maxPixels: 1e7, allowPath: false });
      const id = `orphan-${i}`;
      await store.createCase({ id, owner: "someone", input: { ...toStoredInput(prepared), id }, options: pipelineOptions(cfg) as unknown as Record<string, unknown>, lease: { runner: "gone-host/77/zz", expiresAtMs: Date.now() - 1 } });
      ids.push(id);
    }
    await store.close();
    // All three look at the same moment: every pass sees every case as free, and the store's
    // atomic claim must give each case to one of them.
    const adopted = await Promise.all(servers.map((s) => s.server.service.adoptUnfinished()));
    expect(adopted.reduce((a, b) => a + b, 0)).toBe(ids.length);
    try {
      const view = servers[0]!.server.store;
      await until(async () => {
        const cases = await Promise.all(ids.map((id) => view.getCase(id)));
        return cases.every((c) => c && ["completed", "abstained", "failed"].includes(c.status)) ? true : undefined;
      }, 30_000, "the orphaned cases to finish");
      for (const id of ids) {
        const events = await view.listEvents(id);
        expect(events.filter((e) => e.type === "status" && e.data.resumed === true), `resumed runs of ${id}`).toHaveLength(1);
        expect(events.filter((e) => e.type === "final"), `final events of ${id}`).toHaveLength(1);
      }
      // k = 3 rollouts per case and no more: no case ran twice.
      expect(openai.stats().byAgent.rollout).toBe(3 * ids.length);
    } finally {
      await Promise.all(servers.map((s) => s.close()));
      await openai.close();
    }
  }, 60_000);
});
