import { Redis } from "ioredis";
import pino from "pino";
import { afterAll, describe, expect, it } from "vitest";
import { RedisProviderBudget } from "../../../src/server/engine/redis-provider-budget.js";
import { TEST_REDIS_URL, redisPrefix } from "../../support/redis-prefix.js";
import { until } from "../../support/until.js";

/**
 * A Redis that restarts empty forgets the slots of the calls still running. Two replicas
 * hold the whole budget (2) when every key of the deployment is deleted: a new call must not
 * get a slot until one of the running calls ends, because both replicas write their running
 * calls back before the pause after the loss is over.
 */
const admin = new Redis(TEST_REDIS_URL);
afterAll(async () => {
  admin.disconnect();
});

async function forgetEverything(prefix: string): Promise<void> {
  const keys = [...(await admin.keys(`${prefix}:*`)), ...(await admin.keys(`semaphore:${prefix}:*`))];
  expect(keys.length).toBeGreaterThan(0);
  await admin.del(...keys);
}

describe("provider budget when Redis loses its data", () => {
  it("gives no slot away that a running call still uses", async () => {
    const prefix = redisPrefix("budget-loss");
    // A slot lives 3 s: the pause after a loss lasts that long, heartbeats come every second.
    const opts = { redisUrl: TEST_REDIS_URL, prefix, endpoint: "http://provider.invalid/v1", maxInFlight: 2, requestsPerMin: null, slotMs: 3000 };
    const log = pino({ level: "silent" });
    const a = new RedisProviderBudget(opts, log);
    const b = new RedisProviderBudget(opts, log);
    try {
      const releaseA = await a.acquire();
      const releaseB = await b.acquire();
      const slotsKey = (await admin.keys(`semaphore:${prefix}:*in-flight`))[0]!;
      expect(await admin.zcard(slotsKey)).toBe(2);

      await forgetEverything(prefix);
      let third = false;
      const next = a.acquire().then((release) => {
        third = true;
        return release;
      });
      // Both replicas write their running calls back…
      await until(async () => ((await admin.zcard(slotsKey)) >= 2 ? true : undefined), 20_000, "both running calls written back");
      // …so the budget is full again and the new call still waits; it goes when one ends.
      expect(third).toBe(false);
      expect(await admin.zcard(slotsKey)).toBe(2);
      releaseB();
      const releaseNext = await next;
      expect(third).toBe(true);
      releaseA();
      releaseNext();
      await until(async () => ((await admin.zcard(slotsKey)) === 0 ? true : undefined), 10_000, "every slot released");
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  }, 60_000);
});
