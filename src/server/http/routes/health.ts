import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { assertLlmConfigured } from "../../../core/config.js";
import { VERSION } from "../../../core/version.js";
import type { RouteDeps } from "./route-deps.js";

const Health = z.object({ status: z.literal("ok"), version: z.string() });
const Ready = z.object({
  status: z.enum(["ready", "not-ready"]),
  checks: z.object({
    store: z.enum(["ok", "unavailable"]),
    model: z.enum(["ok", "not-configured"]),
    accepting: z.boolean(),
  }),
});

/** Unauthenticated probes; they reveal nothing about cases or configuration values. */
export const healthRoutes: FastifyPluginAsyncZod<RouteDeps> = async (app, { config, store, service }) => {
  app.get(
    "/healthz",
    { schema: { tags: ["operations"], summary: "The process is up", security: [], response: { 200: Health } } },
    async () => ({ status: "ok" as const, version: VERSION }),
  );

  app.get(
    "/readyz",
    {
      schema: {
        tags: ["operations"],
        summary: "Ready to take cases: store reachable and a model endpoint configured",
        security: [],
        response: { 200: Ready, 503: Ready },
      },
    },
    async (_request, reply) => {
      const storeOk = await store.ping().then(
        () => true,
        () => false,
      );
      let modelOk = true;
      try {
        assertLlmConfigured(config);
      } catch {
        modelOk = false;
      }
      const accepting = !service.closing;
      const ready = storeOk && modelOk && accepting;
      return reply.status(ready ? 200 : 503).send({
        status: ready ? "ready" : "not-ready",
        checks: { store: storeOk ? "ok" : "unavailable", model: modelOk ? "ok" : "not-configured", accepting },
      });
    },
  );
};
