import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import pg from "pg";

/**
 * A Postgres database and a Redis key prefix of one bench run's own, removed afterwards, on the
 * machine's Postgres and Redis (MEDMMV_BENCH_DATABASE_URL, MEDMMV_BENCH_REDIS_URL; defaults:
 * those the test suites use). A database rather than a schema: the service takes its Postgres
 * schema only from code (openStore's `pgSchema`), never from the environment or DATABASE_URL,
 * so a `medmmv serve` process always writes to the "public" schema of the database it is given.
 */
export const BENCH_DATABASE_URL = process.env.MEDMMV_BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
export const BENCH_REDIS_URL = process.env.MEDMMV_BENCH_REDIS_URL ?? "redis://127.0.0.1:6379";

export interface RunStores {
  databaseUrl: string;
  redisUrl: string;
  redisPrefix: string;
  /** Drops the database and deletes every Redis key under the prefix. */
  remove(): Promise<void>;
}

async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: BENCH_DATABASE_URL, connectionTimeoutMillis: 5_000 });
  try {
    await c.connect();
  } catch (e) {
    throw new Error(`Postgres is not reachable at ${BENCH_DATABASE_URL.replace(/:[^:@/]*@/, ":***@")} (set MEDMMV_BENCH_DATABASE_URL): ${(e as Error).message}`);
  }
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** Every key under `prefix:`, deleted in batches (SCAN, never KEYS, so a shared Redis is not blocked). */
async function deleteKeys(redisUrl: string, prefix: string): Promise<number> {
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
  let deleted = 0;
  try {
    let cursor = "0";
    do {
      const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 1000);
      cursor = next;
      if (keys.length > 0) deleted += await redis.del(...keys);
    } while (cursor !== "0");
  } finally {
    redis.disconnect();
  }
  return deleted;
}

export async function createRunStores(label: string): Promise<RunStores> {
  const id = `${label}_${randomBytes(4).toString("hex")}`;
  const database = `medmmv_bench_${id}`;
  const redisPrefix = `medmmv-bench-${id}`;
  await admin((c) => c.query(`CREATE DATABASE "${database}"`));
  const url = new URL(BENCH_DATABASE_URL);
  url.pathname = `/${database}`;
  return {
    databaseUrl: url.toString(),
    redisUrl: BENCH_REDIS_URL,
    redisPrefix,
    remove: async () => {
      // FORCE: a connection a killed replica left half-closed must not keep the database alive.
      await admin((c) => c.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`));
      await deleteKeys(BENCH_REDIS_URL, redisPrefix);
    },
  };
}
