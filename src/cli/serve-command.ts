import { loadConfig } from "../config.js";
import { isMedmmvError } from "../errors.js";

/**
 * `medmmv serve`: the REST API on HOST:PORT until SIGINT/SIGTERM (graceful shutdown in
 * server.ts); with `--workers N` (or MEDMMV_WORKERS), N such processes on one port and one store.
 */
export async function serveCommand(opts: { workers?: number } = {}): Promise<number> {
  try {
    const config = loadConfig();
    const workers = opts.workers ?? config.http.workers;
    if (workers > 1) {
      const { serveWorkers } = await import("../server-workers.js");
      return await serveWorkers(config, workers);
    }
    const { startServer } = await import("../server.js");
    await startServer(config);
    return 0;
  } catch (err) {
    process.stderr.write(`medmmv serve: ${isMedmmvError(err) ? err.message : String(err)}\n`);
    return 2;
  }
}
