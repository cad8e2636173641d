import { loadConfig } from "../config.js";
import { isMedmmvError } from "../errors.js";

/** `medmmv serve`: the REST API on HOST:PORT until SIGINT/SIGTERM (graceful shutdown in server.ts). */
export async function serveCommand(): Promise<number> {
  try {
    const config = loadConfig();
    const { startServer } = await import("../server.js");
    await startServer(config);
    return 0;
  } catch (err) {
    process.stderr.write(`medmmv serve: ${isMedmmvError(err) ? err.message : String(err)}\n`);
    return 2;
  }
}
