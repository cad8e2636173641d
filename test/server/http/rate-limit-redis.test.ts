import { spawnSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startThrowawayRedis, type ThrowawayService } from "../../support/throwaway-services.js";
import { recordReliability, type ReliabilityRow } from "../../support/reliability-recorder.js";
import { KEY_B, startTestServer, type TestServer } from "./http-harness.js";

/**
 * Two replicas with REDIS_URL: one key has one budget across both (@fastify/rate-limit's
 * Redis store), for authenticated requests and failed attempts alike. A redis-server of our
 * own, without persistence, on a free loopback port (throwaway-services.ts).
 */
const HAVE_REDIS = spawnSync("redis-server", ["--version"]).status === 0;
const rows: ReliabilityRow[] = [];
afterAll(({}, suite) => recordReliability("security-redis", rows, suite));

let redis: ThrowawayService | null = null;
let redisUrl = "";
beforeAll(async () => {
  if (!HAVE_REDIS) return;
  redis = await startThrowawayRedis();
  redisUrl = redis.url;
});
afterAll(async () => {
  await redis?.stop();
});

describe.skipIf(!HAVE_REDIS)("rate limits across replicas (REDIS_URL)", () => {
  it("one key's budget and one address's failed attempts hold across two replicas", async () => {
    const env = { REDIS_URL: redisUrl, MEDMMV_RATE_LIMIT_PER_MIN: "4", MEDMMV_AUTH_FAILURES_PER_MIN: "3" };
    // Replicas of one deployment: one store (so one default Redis prefix, derived from it).
    const first = await startTestServer({ env });
    const replicas: TestServer[] = [first, await startTestServer({ env, dataDir: first.dataDir })];
    try {
      const [one, two] = replicas as [TestServer, TestServer];
      const statuses = [(await one.api("/cases")).status, (await two.api("/cases")).status, (await one.api("/cases")).status, (await two.api("/cases")).status, (await one.api("/cases")).status, (await two.api("/cases")).status];
      expect(statuses).toEqual([200, 200, 200, 200, 429, 429]);
      expect((await two.api("/cases", { key: KEY_B })).status).toBe(200);
      const bad = "not-a-key-0123456789abcdefghijklmnopqr";
      const failures = [(await one.api("/cases", { key: bad })).status, (await two.api("/cases/x/view", { key: bad })).status, (await one.api("/cases", { key: bad })).status, (await two.api("/cases", { key: bad })).status];
      expect(failures).toEqual([401, 401, 401, 429]);
      rows.push({ suite: "security", scenario: "one key across two replicas with REDIS_URL at 4 requests/min; 3 failed attempts/min per address", trials: 11, outcome: `key: ${statuses.join(", ")}; failures: ${failures.join(", ")}; another key unaffected`, itemsLost: 0 });
    } finally {
      for (const r of replicas.reverse()) await r.close();
    }
  });
});
