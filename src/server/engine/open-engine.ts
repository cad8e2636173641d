import type { Logger } from "pino";
import type { Config } from "../../core/config.js";
import type { CaseRecords, RunOwnership } from "../store/case-store.js";
import type { CaseEngine } from "./case-engine.js";
import { LocalEngine } from "./local-engine.js";

/**
 * BullMQ on Redis when REDIS_URL is set (replicas), else this process alone on its store.
 * BullMQ and ioredis are imported only then: loading them cost a server without Redis a few
 * hundred ms of CPU at every start.
 */
export async function openEngine(
  config: Config["engine"],
  deps: { store: Pick<RunOwnership, "listUnfinishedIds"> & Pick<CaseRecords, "getCase">; logger: Logger; onGiveUp: (caseId: string, reason: string) => Promise<void> },
): Promise<CaseEngine> {
  if (!config.redisUrl) return new LocalEngine(deps);
  const { BullmqEngine } = await import("./bullmq-engine.js");
  return new BullmqEngine(
    { redisUrl: config.redisUrl, concurrency: config.concurrency, maxRunStarts: config.maxRunStarts, lockMs: config.lockMs, reconcileMs: config.reconcileMs, prefix: config.prefix, deployment: config.deployment },
    deps,
  );
}
