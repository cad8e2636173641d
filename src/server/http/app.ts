import type { FastifyInstance } from "fastify";
import { serializerCompiler, validatorCompiler } from "fastify-type-provider-zod";
import { AccessRecorder } from "./access-recorder.js";
import { apiKeyAuth, ApiKeys, Credentials } from "./auth.js";
import { registerErrorHandling } from "./errors.js";
import { registerHelmet } from "./plugins/helmet.js";
import { registerMultipart } from "./plugins/multipart.js";
import { RequestGate } from "./plugins/request-gate.js";
import { registerSwagger } from "./plugins/swagger.js";
import type { ServiceMetrics } from "../engine/service-metrics.js";
import { caseRoutes } from "./routes/cases.js";
import { caseFhirRoutes, cdsHooksRoutes } from "./routes/cds-hooks.js";
import { diagnoseRoutes } from "./routes/diagnose.js";
import { eventRoutes } from "./routes/events.js";
import { evidenceGraphRoutes } from "./routes/evidence-graph.js";
import { registerFhirJson } from "./fhir-requests.js";
import { healthRoutes } from "./routes/health.js";
import { metricsRoute } from "./routes/metrics.js";
import { turnRoutes } from "./routes/turns.js";
import { auditEventRoutes } from "./routes/audit-events.js";
import type { RouteDeps } from "./routes/route-deps.js";
import { viewLinkRoutes, viewLinkSecret, viewPageRoutes } from "./routes/view.js";
import { auditorLinkRoutes, auditorPageRoutes } from "./routes/auditor-pages.js";

export type AppOptions = Omit<RouteDeps, "heartbeatMs" | "gate" | "credentials" | "openStreams" | "keys" | "access"> & {
  heartbeatMs?: number;
  /** Served at GET /metrics (behind MEDMMV_METRICS_TOKEN and the request gate) when given. */
  metrics?: ServiceMetrics;
};

/**
 * The HTTP API as a Fastify plugin (server.ts creates the instance and starts it).
 * Probes and the OpenAPI docs are public; everything about cases sits behind the API
 * key check and the per-key rate limit, in its own encapsulated context.
 */
export async function medmmvApp(app: FastifyInstance, opts: AppOptions): Promise<void> {
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  registerErrorHandling(app, opts.config);
  app.addHook("onRequest", async (request, reply) => {
    void reply.header("x-request-id", request.id);
  });

  // One gate for every authenticated route: one rate-limit budget per key, failed attempts counted first.
  const gate = await RequestGate.register(app, opts.config);
  app.decorateRequest("principal", null);
  const keys = new ApiKeys(opts.config.http.apiKeys, opts.config.http.keyFile);
  // Cases a key stored before it joined a team move into the team (each start; cheap when none are left).
  for (const k of keys.teamKeys()) await opts.store.adoptCases(k.owner, k.tenant, k.id);
  const credentials = new Credentials(keys, opts.config.cds.issuerKeys);
  const access = new AccessRecorder(opts.store);
  const deps: RouteDeps = { ...opts, heartbeatMs: opts.heartbeatMs ?? 15_000, gate, credentials, keys, access, openStreams: new Map() };

  await registerHelmet(app);
  await registerSwagger(app);
  await app.register(healthRoutes, deps);
  // Prometheus's scrape: its own token, through the same gate (failed attempts counted first).
  if (opts.metrics) metricsRoute(app, opts.metrics, opts.config.metrics.token, gate);

  const viewDeps = { ...deps, secret: viewLinkSecret(opts.config.http.viewLinkSecret) };
  // The audit page authenticates by API key or by signed link, so it sits outside the key-only context.
  await app.register(viewPageRoutes, viewDeps);
  // The auditor pages likewise: an auditor link (or the key), HTML pages and exports.
  await app.register(auditorPageRoutes, viewDeps);
  // CDS Hooks: an EHR authenticates with its own signed JWT, so these sit outside the key-only context too.
  await app.register(cdsHooksRoutes, viewDeps);
  // A case's FHIR result: an API key, or the JWT of the EHR that made the case through the hook.
  await app.register(caseFhirRoutes, deps);

  await app.register(async (api) => {
    // Cases are JSON or multipart; a plain-text body is a client mistake (415), not a case.
    api.removeContentTypeParser("text/plain");
    registerFhirJson(api);
    api.addHook("onRequest", gate.hook(apiKeyAuth(keys)));
    await registerMultipart(api, opts.config.http);
    await api.register(diagnoseRoutes, deps);
    await api.register(caseRoutes, deps);
    await api.register(eventRoutes, deps);
    await api.register(evidenceGraphRoutes, deps);
    await api.register(viewLinkRoutes, viewDeps);
    await api.register(auditorLinkRoutes, viewDeps);
    await api.register(turnRoutes, deps);
    await api.register(auditEventRoutes, deps);
  });
}

// Registered into the caller's context rather than a child one (what fastify-plugin does),
// so the error and not-found handlers apply to the whole server.
(medmmvApp as unknown as Record<symbol, boolean>)[Symbol.for("skip-override")] = true;
