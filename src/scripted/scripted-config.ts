import { loadConfig, type Config } from "../core/config.js";

/** The scripted models' names: what the scripted servers' configurations (here, and the tests' server children) set. */
export const SCRIPTED_MODELS = { executor: "scripted-executor", judge: "scripted-judge" } as const;

/**
 * MEDMMV_MODEL_PROFILES with an empty entry for each scripted model. Such a model's first call
 * does not go alone (first contact, core/llm/model-adaptation.ts): for a test whose first call
 * hangs or is held, where every other call would otherwise wait FIRST_CONTACT_WAIT_MS behind it.
 */
export const SCRIPTED_MODEL_PROFILES = JSON.stringify({ [SCRIPTED_MODELS.executor]: {}, [SCRIPTED_MODELS.judge]: {} });

/** A Config pointed at the scripted servers, built through the real env loader. */
export function scriptedConfig(openaiBaseUrl: string, env: Record<string, string> = {}): Config {
  return loadConfig({
    OPENAI_BASE_URL: openaiBaseUrl,
    OPENAI_API_KEY: "test-key",
    MEDMMV_MODEL: SCRIPTED_MODELS.executor,
    MEDMMV_JUDGE_MODEL: SCRIPTED_MODELS.judge,
    MEDMMV_LLM_BACKOFF_BASE_MS: "20",
    MEDMMV_LLM_TIMEOUT_MS: "5000",
    MEDMMV_CACHE: "off",
    MEDMMV_LOG_LEVEL: "silent",
    ...env,
  });
}
