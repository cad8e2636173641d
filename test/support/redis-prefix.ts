import { randomBytes } from "node:crypto";

/** The Redis the suites share (`.ci/run` starts one); REDIS_URL overrides it. */
export const TEST_REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

/** A key prefix of its own per test, so suites running in parallel on one Redis never meet. */
export function redisPrefix(name: string): string {
  return `t-${name}-${randomBytes(4).toString("hex")}`;
}
