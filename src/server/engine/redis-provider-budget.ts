import { createHash, randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import { RateLimiterRedis, type RateLimiterAbstract } from "rate-limiter-flexible";
import { Semaphore } from "redis-semaphore";
import { describeError } from "../../core/contracts/errors.js";
import type { SharedBudget } from "../../core/llm/limiter.js";
import { abortableSleep, consumeOrWait } from "./budget-waits.js";
import { openRedis } from "./redis-connection.js";

/** How often a waiting call asks again for a slot (redis-semaphore polls). */
const RETRY_MS = 20;

/**
 * One provider budget for every replica on one Redis: the model calls in flight
 * (MEDMMV_MAX_CONCURRENCY, a redis-semaphore counting semaphore), the requests per minute
 * (MEDMMV_PROVIDER_RPM, rate-limiter-flexible), and the provider's Retry-After after a 429
 * (a key every replica reads before it calls). Keyed by the endpoint, so two deployments on
 * different providers sharing a Redis do not share a budget.
 */
export class RedisProviderBudget implements SharedBudget {
  readonly #redis: Redis;
  readonly #key: string;
  readonly #limit: number;
  readonly #rpm: RateLimiterAbstract | null;
  readonly #log: Logger;
  /**
   * A slot is held at most this long without a refresh (redis-semaphore refreshes it every
   * third of it while the call lasts): a replica killed mid-call frees its slots after it.
   */
  readonly #slotMs: number;
  /** The slots of this process's calls in flight (written back after a Redis data loss). */
  readonly #held = new Map<string, Semaphore>();
  /** The epoch this process last saw; null before its first look. */
  #epoch: string | null = null;
  readonly #heartbeat: NodeJS.Timeout;
  #beating = false;

  constructor(opts: { redisUrl: string; prefix: string; endpoint: string; maxInFlight: number; requestsPerMin: number | null; slotMs: number }, logger: Logger) {
    this.#redis = openRedis(opts.redisUrl, "medmmv-budget");
    this.#redis.on("error", (err: Error) => logger.warn({ reason: err.message }, "redis connection error (provider budget; reconnecting)"));
    this.#key = `${opts.prefix}:budget:${createHash("sha256").update(opts.endpoint).digest("hex").slice(0, 16)}`;
    this.#limit = opts.maxInFlight;
    this.#rpm = opts.requestsPerMin ? new RateLimiterRedis({ storeClient: this.#redis, keyPrefix: `${this.#key}:rpm`, points: opts.requestsPerMin, duration: 60 }) : null;
    this.#log = logger;
    this.#slotMs = opts.slotMs;
    // Within a third of a slot's life: a lost slot is back long before the pause after a loss ends.
    this.#heartbeat = setInterval(() => {
      // One beat at a time: while Redis is away, beats would otherwise queue up in the client.
      if (this.#beating) return;
      this.#beating = true;
      this.#keepSlots()
        .catch((err: unknown) => logger.debug({ code: describeError(err).code }, "provider-budget heartbeat failed (Redis unreachable?)"))
        .finally(() => (this.#beating = false));
    }, Math.max(50, Math.floor(opts.slotMs / 3)));
    this.#heartbeat.unref();
  }

  get #slotsKey(): string {
    // redis-semaphore keeps a semaphore named N under the key "semaphore:N".
    return `semaphore:${this.#key}:in-flight`;
  }

  /** Checks the epoch; after a data loss, pauses new calls and writes this process's slots back. True when a loss was seen now. */
  async #checkEpoch(): Promise<boolean> {
    const epochKey = `${this.#key}:epoch`;
    const seen = await this.#redis.get(epochKey);
    if (seen !== null && seen === this.#epoch) return false;
    if (seen === null && this.#epoch === null) {
      // This process's first look at a fresh Redis (or a fresh deployment): nothing was lost that it knows of.
      await this.#redis.set(epochKey, randomUUID(), "NX");
      this.#epoch = await this.#redis.get(epochKey);
      return false;
    }
    if (seen === null) {
      // Ours is the first process to notice: pause everyone before the epoch comes back.
      await this.#setPause(this.#slotMs);
      await this.#redis.set(epochKey, randomUUID(), "NX");
    }
    await this.#writeSlotsBack();
    this.#epoch = await this.#redis.get(epochKey);
    this.#log.warn({ inFlight: this.#held.size }, "Redis lost the provider budget (restarted empty?): new calls pause while every replica writes its running calls back");
    return true;
  }

  async #writeSlotsBack(): Promise<void> {
    if (this.#held.size === 0) return;
    const now = Date.now();
    await this.#redis.zadd(this.#slotsKey, ...[...this.#held.keys()].flatMap((id) => [now, id]));
    await this.#redis.pexpire(this.#slotsKey, this.#slotMs);
  }

  /** The heartbeat: notice a loss even without new calls, and keep this process's slots written (the library stops refreshing a slot it once lost). */
  async #keepSlots(): Promise<void> {
    if (!(await this.#checkEpoch())) await this.#writeSlotsBack();
  }

  async acquire(signal?: AbortSignal): Promise<() => void> {
    await this.#waitOutPause(signal);
    if (this.#rpm) await consumeOrWait(this.#rpm, "calls", signal);
    for (;;) {
      await this.#checkEpoch();
      await this.#waitOutPause(signal);
      const epoch = this.#epoch;
      const slot = new Semaphore(this.#redis, `${this.#key}:in-flight`, this.#limit, {
        lockTimeout: this.#slotMs,
        refreshInterval: Math.floor(this.#slotMs / 3),
        retryInterval: RETRY_MS,
        acquireTimeout: 24 * 3600_000, // bounded by the caller's signal and timeouts, not here
        onLockLost: () => this.#log.warn("a provider-budget slot lapsed while its call ran (Redis restarted?); the heartbeat writes it back"),
      });
      await slot.acquire(signal);
      let lost: boolean;
      try {
        // A slot taken from a Redis that had just lost its data may be one a running call
        // still uses: look again (this call or the heartbeat may see the loss), and if so
        // give it back and wait behind the pause.
        await this.#checkEpoch();
        lost = this.#epoch !== epoch;
        // Again with the slot held: a 429 may have landed while this call waited for it.
        if (!lost) await this.#waitOutPause(signal);
      } catch (err) {
        await slot.release().catch(() => undefined);
        throw err;
      }
      if (lost) {
        await slot.release().catch(() => undefined);
        continue;
      }
      const id = slot.identifier;
      this.#held.set(id, slot);
      return () => {
        this.#held.delete(id);
        // ZREM too: the library skips the release of a slot it thinks lost, which the heartbeat wrote back.
        void Promise.all([slot.release(), this.#redis.zrem(this.#slotsKey, id)]).catch((err: unknown) => this.#log.warn({ code: describeError(err).code }, "could not release a provider-budget slot (it lapses by itself)"));
      };
    }
  }

  pause(ms: number): void {
    this.#setPause(ms).catch((err: unknown) => this.#log.warn({ code: describeError(err).code }, "could not share the provider's Retry-After"));
  }

  async #setPause(ms: number): Promise<void> {
    // Only ever lengthened: a pause already set keeps the later end (PEXPIRE GT, Redis ≥ 7).
    const key = `${this.#key}:pause`;
    if ((await this.#redis.set(key, "1", "PX", Math.ceil(ms), "NX")) === null) await this.#redis.pexpire(key, Math.ceil(ms), "GT");
  }

  async #waitOutPause(signal?: AbortSignal): Promise<void> {
    for (;;) {
      const left = await this.#redis.pttl(`${this.#key}:pause`);
      if (left <= 0) return;
      await abortableSleep(left, signal);
    }
  }

  async close(): Promise<void> {
    clearInterval(this.#heartbeat);
    this.#redis.disconnect();
  }
}
