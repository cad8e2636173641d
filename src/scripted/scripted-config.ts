import { loadConfig, type Config } from "../core/config.js";

/** A Config pointed at the scripted servers, built through the real env loader. */
export function scriptedConfig(openaiBaseUrl: string, env: Record<string, string> = {}): Config {
  return loadConfig({
    OPENAI_BASE_URL: openaiBaseUrl,
    OPENAI_API_KEY: "test-key",
    MEDMMV_MODEL: "scripted-executor",
    MEDMMV_JUDGE_MODEL: "scripted-judge",
    MEDMMV_LLM_BACKOFF_BASE_MS: "20",
    MEDMMV_LLM_TIMEOUT_MS: "5000",
    MEDMMV_CACHE: "off",
    MEDMMV_LOG_LEVEL: "silent",
    ...env,
  });
}
