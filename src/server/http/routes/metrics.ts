import { randomBytes, timingSafeEqual } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { MedmmvError } from "../../../core/contracts/errors.js";
import type { ServiceMetrics } from "../../engine/service-metrics.js";
import { BEARER, sha256, type Authenticate } from "../auth.js";
import type { RequestGate } from "../plugins/request-gate.js";

/**
 * Every request's route template, method, status and latency, recorded on the way out with
 * label values from closed lists (ServiceMetrics.recordRequest), so ids in paths and
 * client-chosen methods stay out of the labels. Added to the root context, so it sees every
 * request, refused ones included.
 */
export function recordHttpMetrics(app: FastifyInstance, metrics: ServiceMetrics): void {
  app.addHook("onResponse", async (request, reply) => {
    const route = request.routeOptions.url;
    if (route === "/metrics") return;
    metrics.recordRequest(request.method, route, reply.statusCode, reply.elapsedTime / 1000);
  });
}

/**
 * The metrics token as the request gate's authentication (constant-time, like API keys). A scrape
 * is counted under an owner of this process's own (no API key has it: key owners are digests),
 * because Prometheus scrapes every replica and the gate's budgets are shared across replicas.
 */
function metricsTokenAuth(token: string): Authenticate {
  const expected = sha256(token);
  const owner = `metrics:${randomBytes(8).toString("hex")}`;
  return async (request) => {
    const given = BEARER.exec(request.headers.authorization ?? "")?.[1] ?? "";
    if (!timingSafeEqual(sha256(given), expected)) throw new MedmmvError("UNAUTHORIZED", "GET /metrics needs MEDMMV_METRICS_TOKEN as a bearer token (`Authorization: Bearer <token>`)");
    return owner;
  };
}

/**
 * GET /metrics for Prometheus, behind a token of its own (MEDMMV_METRICS_TOKEN, sent as
 * `Authorization: Bearer …`): not an API key, so a scraper sees no case and a tenant sees no
 * metrics. Without the token set the route does not exist. Like every authenticated route it
 * goes through the request gate: a wrong token is counted against the address's budget of
 * failed attempts (429 past it), and scrapes have a budget of their own.
 */
export function metricsRoute(app: FastifyInstance, metrics: ServiceMetrics, token: string | null, gate: RequestGate): void {
  if (!token) return;
  app.get("/metrics", { schema: { hide: true }, onRequest: gate.hook(metricsTokenAuth(token)) }, async (_request, reply) => {
    return reply.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
}
