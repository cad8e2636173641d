import { assertWorkersSupported, loadConfig } from "../core/config.js";
import { isMedmmvError } from "../core/contracts/errors.js";

/**
 * `medmmv serve`: the REST API on HOST:PORT until SIGINT/SIGTERM (graceful shutdown in
 * server.ts); with `--workers N` (or MEDMMV_WORKERS), N such processes on one port and one store;
 * with `--demo`, one process on loopback backed by the scripted model (src/cli/demo/serve-demo.ts).
 */
export async function serveCommand(opts: { workers?: number; demo?: boolean } = {}): Promise<number> {
  try {
    if (opts.demo) {
      const { describeDemo, startDemoService } = await import("./demo/serve-demo.js");
      process.stdout.write(describeDemo(await startDemoService(process.env, { handleSignals: true })));
      return 0;
    }
    const config = loadConfig();
    const workers = opts.workers ?? config.http.workers;
    assertWorkersSupported(config, workers);
    if (workers > 1) {
      const { serveWorkers } = await import("../server/server-workers.js");
      return await serveWorkers(config, workers);
    }
    const { startServer } = await import("../server/server.js");
    await startServer(config);
    return 0;
  } catch (err) {
    process.stderr.write(`medmmv serve: ${isMedmmvError(err) ? err.message : String(err)}\n`);
    return 2;
  }
}
