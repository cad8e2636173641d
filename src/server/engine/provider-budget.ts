import type { Logger } from "pino";
import { RateLimiterMemory } from "rate-limiter-flexible";
import type { Config } from "../../core/config.js";
import { FairLimiter, type SharedBudget } from "../../core/llm/limiter.js";
import { abortableSleep, consumeOrWait } from "./budget-waits.js";

/** The per-minute cap of one process (no Redis): the same rule, kept in memory. */
export class LocalProviderBudget implements SharedBudget {
  readonly #rpm: RateLimiterMemory;
  #pausedUntil = 0;

  constructor(requestsPerMin: number) {
    this.#rpm = new RateLimiterMemory({ points: requestsPerMin, duration: 60 });
  }

  async acquire(signal?: AbortSignal): Promise<() => void> {
    while (Date.now() < this.#pausedUntil) await abortableSleep(this.#pausedUntil - Date.now(), signal);
    await consumeOrWait(this.#rpm, "calls", signal);
    return () => undefined;
  }

  pause(ms: number): void {
    this.#pausedUntil = Math.max(this.#pausedUntil, Date.now() + ms);
  }

  async close(): Promise<void> {}
}

/**
 * The model-call limiter of a server process: per-process fair scheduling (FairLimiter), inside
 * the budget every replica shares on Redis (REDIS_URL), or the per-minute cap of this process alone.
 */
export async function openProviderLimiter(config: Config, logger: Logger): Promise<{ limiter: FairLimiter; close(): Promise<void> }> {
  const endpoint = config.llm.azure?.endpoint ?? config.llm.azure?.instanceName ?? config.llm.baseUrl ?? "https://api.openai.com/v1";
  let budget: (SharedBudget & { close(): Promise<void> }) | null = null;
  if (config.engine.redisUrl) {
    // Redis and its clients (a few hundred ms of CPU to load) only for a server that uses them.
    const { RedisProviderBudget } = await import("./redis-provider-budget.js");
    budget = new RedisProviderBudget({ redisUrl: config.engine.redisUrl, prefix: config.engine.prefix, endpoint, maxInFlight: config.llm.maxConcurrency, requestsPerMin: config.llm.requestsPerMin, slotMs: config.engine.lockMs }, logger);
  } else if (config.llm.requestsPerMin) budget = new LocalProviderBudget(config.llm.requestsPerMin);
  return { limiter: new FairLimiter(config.llm.maxConcurrency, budget), close: async () => budget?.close() };
}
