import rateLimit from "@fastify/rate-limit";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { MedmmvError } from "../../errors.js";

/**
 * Per-key rate limit (in memory, per process). Registered after the auth hook so the
 * counter is the key's owner id, not the client address: clients behind one proxy do
 * not share a budget, and one key cannot escape its budget by changing address.
 */
export async function registerRateLimit(app: FastifyInstance, perMinute: number): Promise<void> {
  await app.register(rateLimit, {
    global: true,
    max: perMinute,
    timeWindow: 60_000,
    keyGenerator: (request: FastifyRequest) => `owner:${request.owner || request.ip}`,
    errorResponseBuilder: (_request, context) =>
      new MedmmvError("RATE_LIMITED", `rate limit exceeded: at most ${context.max} requests per minute per API key; retry in ${context.after}`, {
        details: { limit: context.max, retryAfterSeconds: Math.ceil(context.ttl / 1000) },
      }),
  });
}
