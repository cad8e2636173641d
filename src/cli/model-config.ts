import { assertLlmConfigured, loadConfig, type Config } from "../core/config.js";
import { isMedmmvError } from "../core/contracts/errors.js";

/** The configuration of a command that calls models; null after printing why there is none usable (exit code 2). */
export function modelConfigOrExplain(): Config | null {
  try {
    const config = loadConfig();
    assertLlmConfigured(config);
    return config;
  } catch (err) {
    process.stderr.write(`medmmv: ${isMedmmvError(err) ? err.message : String(err)}\n`);
    return null;
  }
}
