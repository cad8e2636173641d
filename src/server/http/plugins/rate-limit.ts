import rateLimit from "@fastify/rate-limit";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { MedmmvError } from "../../../core/contracts/errors.js";

/**
 * Per-key rate limit (in memory, per process). It runs after the key is identified, so
 * the counter is the key's owner id, not the client address: clients behind one proxy do
 * not share a budget, and one key cannot escape its budget by changing address. Requests
 * without a valid key are counted by address, which throttles key guessing.
 */
export async function registerRateLimit(app: FastifyInstance, perMinute: number): Promise<void> {
  await app.register(rateLimit, {
    global: true,
    max: perMinute,
    timeWindow: 60_000,
    keyGenerator: (request: FastifyRequest) => (request.owner ? `owner:${request.owner}` : `ip:${request.ip}`),
    errorResponseBuilder: (_request, context) =>
      new MedmmvError("RATE_LIMITED", `rate limit exceeded: at most ${context.max} requests per minute per API key; retry in ${context.after}`, {
        details: { limit: context.max, retryAfterSeconds: Math.ceil(context.ttl / 1000) },
      }),
  });
}
