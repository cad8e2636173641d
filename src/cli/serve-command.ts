import { loadConfig } from "../config.js";
import { isMedmmvError } from "../errors.js";

/**
 * `medmmv serve`: the REST API on HOST:PORT until SIGINT/SIGTERM (graceful shutdown in
 * server.ts); with `--workers N` (or MEDMMV_WORKERS), N such processes on one port and one store;
 * with `--demo`, one process on loopback backed by the scripted model (src/demo/serve-demo.ts).
 */
export async function serveCommand(opts: { workers?: number; demo?: boolean } = {}): Promise<number> {
  try {
    if (opts.demo) {
      const { describeDemo, startDemoService } = await import("../demo/serve-demo.js");
      process.stdout.write(describeDemo(await startDemoService(process.env, { handleSignals: true })));
      return 0;
    }
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
