import { createHash, timingSafeEqual } from "node:crypto";
import type { FastifyInstance } from "fastify";
import type { ServiceMetrics } from "../../engine/service-metrics.js";

const digest = (s: string): Buffer => createHash("sha256").update(s).digest();

/**
 * GET /metrics for Prometheus, behind a token of its own (MEDMMV_METRICS_TOKEN, sent as
 * `Authorization: Bearer …`): not an API key, so a scraper sees no case and a tenant sees no
 * metrics. Without the token set the route does not exist. Every request's route template,
 * method, status and latency are recorded on the way out (the template, never the URL, so
 * ids in paths stay out of the labels). Added to the root context, outside the API's auth.
 */
export function registerMetrics(app: FastifyInstance, metrics: ServiceMetrics, token: string | null): void {
  app.addHook("onResponse", async (request, reply) => {
    const route = request.routeOptions.url ?? "unmatched";
    if (route === "/metrics") return;
    metrics.httpRequests.inc({ method: request.method, route, status: String(reply.statusCode) });
    metrics.httpDuration.observe({ method: request.method, route }, reply.elapsedTime / 1000);
  });
  if (!token) return;
  const expected = digest(token);
  app.get("/metrics", { schema: { hide: true } }, async (request, reply) => {
    const given = /^Bearer (.+)$/.exec(request.headers.authorization ?? "")?.[1] ?? "";
    if (!timingSafeEqual(digest(given), expected)) {
      return reply.code(401).header("www-authenticate", 'Bearer realm="metrics"').send({ code: "UNAUTHORIZED", message: "GET /metrics needs MEDMMV_METRICS_TOKEN as a bearer token" });
    }
    return reply.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
}
