import { randomUUID } from "node:crypto";
import { realpathSync } from "node:fs";
import type { IncomingMessage } from "node:http";
import { isIP } from "node:net";
import { pathToFileURL } from "node:url";
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from "fastify";
import type { DestinationStream, Logger } from "pino";
import { assertLlmConfigured, loadConfig, type Config } from "../core/config.js";
import { MedmmvError, describeError } from "../core/contracts/errors.js";
import { Pipeline } from "../core/workflow/pipeline.js";
import { openSearchProvider } from "../core/search/create-search-provider.js";
import { medmmvApp } from "./http/app.js";
import { connectionDrain } from "./http/connection-drain.js";
import { explainListenError } from "./http/listen-errors.js";
import { createLogger } from "./http/logger.js";
import { CaseService } from "./service/case-service.js";
import { openProviderLimiter } from "./engine/provider-budget.js";
import { ServiceMetrics } from "./engine/service-metrics.js";
import { registerMetrics } from "./http/routes/metrics.js";
import { storeResponseCache } from "./service/store-cache.js";
import type { CaseStore } from "./store/case-store.js";
import { openStore, type OpenStoreOptions } from "./store/open-store.js";

export interface StartServerOptions {
  /** Where log lines go (default stdout); tests capture them here. */
  logStream?: DestinationStream;
  /** SSE heartbeat interval (default 15 s). */
  heartbeatMs?: number;
  /**
   * Shut down gracefully on SIGINT/SIGTERM and exit (default true, for `medmmv serve`).
   * Tests that run several servers in one process turn it off.
   */
  handleSignals?: boolean;
  /** Passed to openStore (tests put Postgres tables in a throwaway schema). */
  storeOptions?: OpenStoreOptions;
}

export interface RunningServer {
  /** e.g. http://127.0.0.1:8787 */
  address: string;
  /** Graceful stop: refuse new requests, abort in-flight model calls (their cases stay checkpointed and resume at the next start), close the search provider and the store. */
  close(): Promise<void>;
  app: FastifyInstance;
  service: CaseService;
  store: CaseStore;
  logger: Logger;
}

const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function isLoopback(host: string): boolean {
  if (host === "localhost") return true;
  if (isIP(host) === 4) return host.startsWith("127.");
  return host === "::1";
}

/**
 * The service's Fastify app on an open store: search provider, pipeline, case service and the
 * medmmv plugin, with the hooks that close them in order. It does not listen, so tests can
 * drive the very same app through app.inject; startServer listens on it.
 */
export async function buildServerApp(
  config: Config,
  store: CaseStore,
  logger: Logger,
  opts: Pick<StartServerOptions, "storeOptions" | "heartbeatMs"> = {},
): Promise<{ app: FastifyInstance; service: CaseService }> {
  const search = await openSearchProvider(config, { pgSchema: opts.storeOptions?.pgSchema });
  // Model calls inside the provider budget every replica shares (src/server/engine/provider-budget.ts).
  const provider = openProviderLimiter(config, logger);
  let engine: CaseService["engine"] | null = null;
  const metrics = new ServiceMetrics({ store, engine: () => engine });
  const pipeline = new Pipeline(config, { checkpointer: store.checkpointer(), cache: storeResponseCache(store), search, limiter: provider.limiter, callbacks: [metrics.modelCallbacks()] });
  const service = new CaseService({ config, store, pipeline, logger, metrics });
  engine = service.engine;
  const app: FastifyInstance = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    bodyLimit: config.http.maxBodyBytes,
    // A caller's x-request-id is kept when it is a plain token, so logs can be joined across services.
    genReqId: (req: IncomingMessage) => {
      const given = req.headers["x-request-id"];
      return typeof given === "string" && SAFE_REQUEST_ID.test(given) ? given : randomUUID();
    },
    return503OnClosing: true,
    forceCloseConnections: "idle",
  });
  registerMetrics(app, metrics, config.metrics.token);
  try {
    await app.register(medmmvApp, { config, service, store, heartbeatMs: opts.heartbeatMs });
  } catch (err) {
    await search.close?.().catch(() => undefined);
    await provider.close();
    throw err;
  }
  app.addHook("preClose", async () => {
    await service.close();
  });
  app.addHook("onClose", async () => {
    // The local corpus holds its own store connection (a second SQLite handle or a pg pool).
    await search.close?.().catch(() => undefined);
    await provider.close();
    await store.close();
  });
  return { app, service };
}

/** Open the store, build the pipeline and the service, listen, then resume unfinished cases. */
export async function startServer(config: Config, opts: StartServerOptions = {}): Promise<RunningServer> {
  if (config.http.apiKeys.length === 0 && !isLoopback(config.http.host)) {
    throw new MedmmvError(
      "CONFIG_MISSING",
      `refusing to serve on HOST=${config.http.host} without API keys: set MEDMMV_API_KEYS (comma-separated) or listen on 127.0.0.1`,
    );
  }
  const logger = createLogger(config.logLevel, opts.logStream);
  const store = await openStore(config.store, opts.storeOptions);
  let app: FastifyInstance | null = null;
  try {
    const built = await buildServerApp(config, store, logger, opts);
    const { service } = built;
    const instance = built.app;
    app = instance;
    const drain = connectionDrain(instance.server);
    await instance.listen({ host: config.http.host, port: config.http.port }).catch((err: unknown) => {
      throw explainListenError(err, config.http.host, config.http.port);
    });
    const addr = instance.server.address();
    const port = typeof addr === "object" && addr ? addr.port : config.http.port;
    const host = config.http.host.includes(":") ? `[${config.http.host}]` : config.http.host;
    const address = `http://${host}:${port}`;
    logger.info({ address, store: store.backend, docs: `${address}/docs` }, "medmmv listening");
    if (config.llm.tracing) logger.warn("LANGSMITH_TRACING=true: every model run, prompts with patient text included, is sent to LangSmith");

    let llmReady = true;
    try {
      assertLlmConfigured(config);
    } catch (err) {
      llmReady = false;
      // Once, at start: the same words POST /diagnose answers with (variable names, no values).
      logger.warn({ code: describeError(err).code }, `${describeError(err).message} Until then cases are refused (503 MODEL_NOT_CONFIGURED) and unfinished ones wait.`);
    }
    if (llmReady) {
      service.start();
    }
    let onSignal: ((signal: NodeJS.Signals) => void) | null = null;
    const close = async (): Promise<void> => {
      if (onSignal) {
        process.off("SIGINT", onSignal);
        process.off("SIGTERM", onSignal);
      }
      drain.closeUnused();
      await instance.close();
    };
    if (opts.handleSignals !== false) {
      let stopping = false;
      onSignal = (signal) => {
        if (stopping) return;
        stopping = true;
        logger.info({ signal }, "shutting down");
        close().then(
          () => process.exit(0),
          (err: unknown) => {
            logger.error({ code: describeError(err).code }, "shutdown failed");
            process.exit(1);
          },
        );
      };
      process.on("SIGINT", onSignal);
      process.on("SIGTERM", onSignal);
    }
    return { address, close, app: instance, service, store, logger };
  } catch (err) {
    if (app) await app.close().catch(() => undefined);
    else await store.close().catch(() => undefined);
    throw err;
  }
}

/** `medmmv serve` / `npm start`: run until SIGINT or SIGTERM, then shut down gracefully. */
export function serve(config: Config = loadConfig()): Promise<RunningServer> {
  return startServer(config, { handleSignals: true });
}

function isMain(): boolean {
  const entry = process.argv[1];
  if (!entry) return false;
  try {
    return import.meta.url === pathToFileURL(realpathSync(entry)).href;
  } catch {
    return false;
  }
}

if (isMain()) {
  serve().catch((err: unknown) => {
    const e = describeError(err);
    process.stderr.write(`medmmv: ${e.code}: ${e.message}\n`);
    process.exit(1);
  });
}
