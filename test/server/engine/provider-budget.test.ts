import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import { startScriptedOpenAI } from "../../../src/scripted/scripted-openai-server.js";
import { chestPain, startTestServer, until, type TestServer } from "../http/http-harness.js";
import { TEST_REDIS_URL, redisPrefix } from "../../support/redis-prefix.js";

/**
 * One provider budget across replicas (Redis): three replicas at MEDMMV_MAX_CONCURRENCY=16
 * never have more than 16 calls open at the provider together (counted at the scripted
 * server), and a 429 with Retry-After seen by one replica holds every replica back.
 */
const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

const CAP = 16;

describe("provider budget across replicas", () => {
  it(`three replicas, 60 cases: at most ${CAP} calls in flight at the provider; a 429 storm with Retry-After pauses every replica`, async () => {
    const openai = await startScriptedOpenAI({ scenario: clinicalScenario({ rolloutAnswers: ["B", "B", "A"] }), latencyMs: 60 });
    const dataDir = await mkdtemp(path.join(tmpdir(), "medmmv-budget-"));
    dirs.push(dataDir);
    const env = {
      REDIS_URL: TEST_REDIS_URL,
      MEDMMV_REDIS_PREFIX: redisPrefix("budget"),
      MEDMMV_MAX_CONCURRENCY: String(CAP),
      MEDMMV_ENGINE_CONCURRENCY: "32",
      MEDMMV_RATE_LIMIT_PER_MIN: "100000",
      MEDMMV_CACHE: "off",
      MEDMMV_LLM_BACKOFF_BASE_MS: "20",
    };
    const servers: TestServer[] = [];
    try {
      for (let i = 0; i < 3; i++) servers.push(await startTestServer({ dataDir, openai, env }));
      const submit = async (s: TestServer, i: number): Promise<string> => {
        const res = await s.api("/diagnose", { method: "POST", json: chestPain({ question: `Which diagnosis fits case ${i}?` }), headers: { prefer: "respond-async" } });
        expect(res.status).toBe(202);
        return ((await res.json()) as { caseId: string }).caseId;
      };
      const ids = await Promise.all(Array.from({ length: 60 }, (_, i) => submit(servers[i % 3]!, i)));
      // Mid-run, a storm: the next 5 calls get 429 with Retry-After: 1 s.
      await until(() => (openai.stats().total >= 120 ? true : undefined), 60_000, "120 calls made");
      openai.addFault({ kind: "status", status: 429, retryAfterSec: 1, times: 5 });
      await until(async () => {
        const all = await Promise.all(ids.map((id) => servers[0]!.server.store.getCase(id)));
        return all.every((c) => c && ["completed", "abstained", "failed"].includes(c.status)) ? true : undefined;
      }, 120_000, "the 60 cases to finish");
      const stats = openai.stats();
      expect(stats.peakInFlight).toBeLessThanOrEqual(CAP);
      expect(stats.peakInFlight).toBeGreaterThan(CAP / 2); // the cap, not the demand, was the limit
      // Every replica ran cases (the queue spread them).
      const ran = servers.map((s) => s.logs.lines().filter((l) => l.msg === "case finished").length);
      expect(ran.every((n) => n > 0)).toBe(true);
      // After the first 429, no call of any replica started before its Retry-After was over
      // Only calls that already held a slot and had passed their last pause check when it landed
      // may still start: at most one per slot, so at most CAP (without the shared pause, every
      // waiting call of the three replicas would start as slots free up).
      const first429 = stats.log.find((c) => c.status === 429)!;
      expect(first429).toBeDefined();
      const startedDuringPause = stats.log.filter((c) => c.start > first429.end! + 50 && c.start < first429.end! + 900);
      expect(startedDuringPause.length).toBeLessThanOrEqual(CAP);
      const after = stats.log.filter((c) => c.start >= first429.end! + 900 && c.start < first429.end! + 2_000);
      expect(after.length).toBeGreaterThan(0);
      expect(ids.length).toBe(60);
    } finally {
      for (const s of servers) await s.close();
      await openai.close();
    }
  }, 180_000);
});
