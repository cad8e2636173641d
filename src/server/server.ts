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
import { frameworkErrors, MAX_PARAM_LENGTH } from "./http/errors.js";
import { explainListenError } from "./http/listen-errors.js";
import { createLogger } from "./http/logger.js";
import { providerFailureLog } from "./provider-failure-log.js";
import { RetentionSweeper } from "./service/retention.js";
import { CaseService } from "./service/case-service.js";
import { openProviderLimiter } from "./engine/provider-budget.js";
import { ServiceMetrics } from "./engine/service-metrics.js";
import { recordHttpMetrics } from "./http/routes/metrics.js";
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

/**
 * A caller's x-request-id is kept only in a shape that cannot carry text: a UUID, or 16 to 64
 * hex digits (a W3C trace id, a hash). Anything else (a name, an MRN, a sentence) would land
 * in every log line of the request, so it is replaced by a fresh UUID.
 */
export const SAFE_REQUEST_ID = /^(?:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}|[0-9a-fA-F]{16,64})$/;

export function isLoopback(host: string): boolean {
  if (host === "localhost") return true;
  if (isIP(host) === 4) return host.startsWith("127.");
  return host === "::1";
}

/** MEDMMV_TRUST_PROXY as Fastify's types take it: a hop count trusts that many proxies nearest to us. */
function trustProxyOption(v: Config["http"]["trustProxy"]): boolean | string[] | ((address: string, hop: number) => boolean) {
  return typeof v === "number" ? (_address, hop) => hop < v : v;
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
  const provider = await openProviderLimiter(config, logger);
  let engine: CaseService["engine"] | null = null;
  const metrics = new ServiceMetrics({ store, engine: () => engine });
  const pipeline = new Pipeline(config, {
    checkpointer: store.checkpointer(),
    cache: storeResponseCache(store),
    search,
    limiter: provider.limiter,
    callbacks: [metrics.modelCallbacks(), providerFailureLog(config, logger)],
    // One response cache per tenant: the owner of the case is part of every cache key.
    cacheScope: async (caseId) => {
      const owner = (await store.getCase(caseId))?.owner;
      return owner ? `owner:${owner}` : null;
    },
  });
  await pipeline.ready();
  const service = await CaseService.open({ config, store, pipeline, logger, metrics });
  engine = service.engine;
  const app: FastifyInstance = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    bodyLimit: config.http.maxBodyBytes,
    // Slow or silent clients cannot hold sockets (docs/operations.md#timeouts): the whole request
    // within requestTimeout, its headers within headersTimeout, no connection idle past
    // connectionTimeout, keep-alive connections idle at most keepAliveTimeout.
    requestTimeout: config.http.timeouts.requestMs,
    connectionTimeout: config.http.timeouts.connectionMs,
    keepAliveTimeout: config.http.timeouts.keepAliveMs,
    // Node checks the two request timeouts on this interval: it bounds how late a slow client is cut off.
    http: { headersTimeout: config.http.timeouts.headersMs, connectionsCheckingInterval: Math.min(1000, config.http.timeouts.headersMs) },
    trustProxy: trustProxyOption(config.http.trustProxy),
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    frameworkErrors,
    // A caller's x-request-id is kept when it is a plain token, so logs can be joined across services.
    genReqId: (req: IncomingMessage) => {
      const given = req.headers["x-request-id"];
      return typeof given === "string" && SAFE_REQUEST_ID.test(given) ? given : randomUUID();
    },
    return503OnClosing: true,
    forceCloseConnections: "idle",
  });
  recordHttpMetrics(app, metrics);
  try {
    await app.register(medmmvApp, { config, service, store, heartbeatMs: opts.heartbeatMs, metrics });
  } catch (err) {
    await search.close?.().catch(() => undefined);
    await provider.close();
    throw err;
  }
  const retention = config.retention.days ? new RetentionSweeper({ store, service, days: config.retention.days, logger }) : null;
  if (retention) app.addHook("onReady", async () => retention.start());
  app.addHook("preClose", async () => {
    await retention?.stop();
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
  if (config.http.apiKeys.length === 0 && config.http.keyFile.length === 0 && !isLoopback(config.http.host)) {
    throw new MedmmvError(
      "CONFIG_MISSING",
      `refusing to serve on HOST=${config.http.host} without API keys: set MEDMMV_API_KEYS (comma-separated) or MEDMMV_API_KEYS_FILE, or listen on 127.0.0.1`,
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
