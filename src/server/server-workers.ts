import cluster, { type Worker } from "node:cluster";
import { randomBytes } from "node:crypto";
import type { Config } from "../core/config.js";
import { createLogger } from "./http/logger.js";
import { startServer } from "./server.js";

/**
 * `medmmv serve --workers N`: N server processes sharing one port (node:cluster hands out
 * the connections) and one store. One Node process runs its JavaScript on one core, and a
 * case costs tens of milliseconds of it (BENCHMARKS.md), so a host with more cores serves
 * more cases with more processes. They need REDIS_URL: the case engine (BullMQ) gives each
 * case to one worker at a time, and the cases of a worker that dies go back to the queue for
 * the others or its replacement once their job locks lapse (src/server/engine/).
 *
 * The primary only supervises: it restarts a worker that exits unexpectedly (at most
 * MAX_RESTARTS within RESTART_WINDOW_MS, then it stops everything rather than crash-loop),
 * and on SIGINT/SIGTERM it asks every worker to stop gracefully and returns when they have.
 * Returns the exit code for the primary; a worker runs until its own shutdown.
 */
const MAX_RESTARTS = 5;
const RESTART_WINDOW_MS = 60_000;
const STOP_TIMEOUT_MS = 30_000;

export async function serveWorkers(config: Config, workers: number): Promise<number> {
  if (!cluster.isPrimary) {
    await startServer(config, { handleSignals: true });
    return 0;
  }
  const log = createLogger(config.logLevel).child({ role: "primary" });
  const restarts: number[] = [];
  let stopping = false;
  let exitCode = 0;
  // The workers not yet exited, kept here: cluster.workers drops a worker only once it has both
  // exited and disconnected, in either order, so on the last worker's 'exit' it could still list
  // it, the stop below never resolved, and the primary ended with Node's exit code 13 (a
  // top-level await left pending) instead of 0.
  const live = new Set<Worker>();
  // One view-link secret for every worker, or a link made by one worker is refused by the next
  // (the connections are dealt out in turn). Without MEDMMV_VIEW_LINK_SECRET the primary makes
  // one, once, and hands it to each worker (and each replacement) in its environment.
  const viewLinkSecret = config.http.viewLinkSecret ?? randomBytes(32).toString("base64url");
  if (!config.http.viewLinkSecret) log.info("MEDMMV_VIEW_LINK_SECRET unset: the workers share a random one; view links end with this server");
  const fork = (): void => {
    const worker = cluster.fork({ MEDMMV_VIEW_LINK_SECRET: viewLinkSecret });
    live.add(worker);
    log.info({ workerPid: worker.process.pid }, "worker started");
  };

  return new Promise<number>((resolve) => {
    const stop = (code: number): void => {
      if (stopping) return;
      stopping = true;
      exitCode = code;
      if (live.size === 0) resolve(exitCode);
      for (const w of live) w.process.kill("SIGTERM");
      // A worker stuck in its shutdown must not keep the server up forever.
      setTimeout(() => {
        for (const w of live) w.process.kill("SIGKILL");
      }, STOP_TIMEOUT_MS).unref();
    };

    cluster.on("exit", (worker, code, signal) => {
      live.delete(worker);
      if (stopping) {
        log.info({ workerPid: worker.process.pid, code, signal }, "worker stopped");
        if (live.size === 0) resolve(exitCode);
        return;
      }
      const now = Date.now();
      while (restarts.length > 0 && now - restarts[0]! > RESTART_WINDOW_MS) restarts.shift();
      if (restarts.length >= MAX_RESTARTS) {
        log.error({ restarts: restarts.length, windowMs: RESTART_WINDOW_MS }, "workers keep dying: stopping the server");
        stop(1);
        return;
      }
      restarts.push(now);
      log.warn({ workerPid: worker.process.pid, code, signal }, "worker exited unexpectedly: starting another; its cases go back to the queue");
      fork();
    });
    process.once("SIGINT", () => stop(0));
    process.once("SIGTERM", () => stop(0));
    for (let i = 0; i < workers; i++) fork();
  });
}
