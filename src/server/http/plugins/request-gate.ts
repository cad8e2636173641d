import rateLimit from "@fastify/rate-limit";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Redis } from "ioredis";
import type { Config } from "../../../core/config.js";
import { isMedmmvError, MedmmvError } from "../../../core/contracts/errors.js";
import type { Authenticate } from "../auth.js";

type Limiter = ReturnType<FastifyInstance["createRateLimit"]>;

/** Every authenticated route's single onRequest hook. */
export type GateHook = (request: FastifyRequest, reply: FastifyReply) => Promise<void>;

/**
 * Authentication and rate limits in one place, in one order, for every route that needs a
 * credential (the API, the audit view, CDS Hooks):
 *
 * 1. authenticate (API key, view link or CDS JWT, whichever the route takes);
 * 2. a failed attempt is counted first, against the client address's budget of failed
 *    attempts (MEDMMV_AUTH_FAILURES_PER_MIN), and only then refused: 401, or 429 once the
 *    address is past its budget, so guessing keys or tokens is throttled on every route;
 * 3. an authenticated request is counted against its key's budget (MEDMMV_RATE_LIMIT_PER_MIN),
 *    one budget whichever route it calls: the counters live in one store for the whole server,
 *    in this process or, with REDIS_URL, in Redis for every replica.
 *
 * The client address is Fastify's `request.ip`, which honours MEDMMV_TRUST_PROXY.
 */
export class RequestGate {
  private constructor(
    private readonly perKey: Limiter,
    private readonly failures: Limiter,
    private readonly perMin: number,
    private readonly failuresPerMin: number,
  ) {}

  /** Registers the rate-limit plugin once, on the root, with no hooks of its own (this class calls it). */
  static async register(app: FastifyInstance, config: Config): Promise<RequestGate> {
    let redis: Redis | null = null;
    if (config.redis.url) {
      // ioredis only for a server that counts in Redis: loading it costs every other start.
      const ioredis = await import("ioredis");
      redis = new ioredis.Redis(config.redis.url, { maxRetriesPerRequest: 1, enableOfflineQueue: true, lazyConnect: false });
    }
    if (redis) {
      // An unreachable Redis fails the requests it counts (503), it does not crash the server.
      redis.on("error", (err: unknown) => app.log.warn({ code: (err as { code?: string }).code ?? "REDIS_ERROR" }, "rate-limit store: Redis error"));
      app.addHook("onClose", async () => {
        await redis.quit().catch(() => redis.disconnect());
      });
    }
    await app.register(rateLimit, {
      global: false,
      max: config.http.rateLimitPerMin,
      timeWindow: 60_000,
      keyGenerator: (request: FastifyRequest) => `owner:${request.owner}`,
      // Under MEDMMV_REDIS_PREFIX like every other key, so deployments (and test or bench runs)
      // sharing one Redis keep separate budgets and can remove their keys by prefix.
      ...(redis ? { redis, nameSpace: `${config.engine.prefix}:rate:` } : {}),
    });
    const perKey = app.createRateLimit();
    const failures = app.createRateLimit({ max: config.http.authFailuresPerMin, timeWindow: 60_000, keyGenerator: (request: FastifyRequest) => `authfail:${request.ip}` });
    app.decorateRequest("owner", "");
    return new RequestGate(perKey, failures, config.http.rateLimitPerMin, config.http.authFailuresPerMin);
  }

  /** The onRequest hook of a route (or a context of routes) that authenticates with `authenticate`. */
  hook(authenticate: Authenticate): GateHook {
    return async (request, reply) => {
      let owner: string;
      try {
        owner = await authenticate(request);
      } catch (err) {
        if (!isMedmmvError(err) || err.code !== "UNAUTHORIZED") throw err;
        await this.#count(this.failures, request, reply, `too many failed authentications from this address: at most ${this.failuresPerMin} per minute`);
        throw err;
      }
      request.owner = owner;
      await this.#count(this.perKey, request, reply, `rate limit exceeded: at most ${this.perMin} requests per minute per API key, over every route`, true);
    };
  }

  async #count(limiter: Limiter, request: FastifyRequest, reply: FastifyReply, what: string, headers = false): Promise<void> {
    let r: Awaited<ReturnType<Limiter>>;
    try {
      r = await limiter(request);
    } catch (err) {
      throw new MedmmvError("STORE_FAILED", "the rate-limit store is unreachable", { cause: err, retryable: true });
    }
    if (r.isAllowed) return;
    if (headers) void reply.header("x-ratelimit-limit", r.max).header("x-ratelimit-remaining", r.remaining).header("x-ratelimit-reset", r.ttlInSeconds);
    if (!r.isExceeded) return;
    void reply.header("retry-after", r.ttlInSeconds);
    throw new MedmmvError("RATE_LIMITED", `${what}; retry in ${r.ttlInSeconds} s`, { details: { limit: r.max, retryAfterSeconds: r.ttlInSeconds } });
  }
}
