import { MedmmvError } from "../../contracts/errors.js";
import { guardedFetch } from "../model-fetch.js";
import { commonOptions, lazyIntegration, sdkTimeoutMs, trimmed, unitTemperature, type ProviderModule } from "./provider-module.js";

export const ANTHROPIC_DEFAULT_BASE_URL = "https://api.anthropic.com";

const integration = lazyIntegration("anthropic", () => import("../anthropic-chat-model.js"));

/**
 * Anthropic's Messages API through LangChain's own integration (@langchain/anthropic, with our
 * prompt-cache breakpoints: anthropic-chat-model.ts). JSON by a forced tool call, which every
 * Claude model takes (its json_schema output format only some).
 */
export const anthropic: ProviderModule = {
  id: "anthropic",
  defaults: (cfg) => cfg.anthropic,
  endpointUrl: (t) => `${trimmed(t.baseUrl ?? ANTHROPIC_DEFAULT_BASE_URL)}/v1/messages`,
  structuredMethod: () => "functionCalling",
  structuredMethods: () => ["functionCalling"],
  variables: { url: "ANTHROPIC_BASE_URL", key: "ANTHROPIC_API_KEY" },
  load: integration.load,
  build(t, { temperature, maxTokens }, cfg) {
    // Config refuses a missing key at load (config.ts); a program that builds its own Config gets a typed error too.
    if (!t.apiKey) throw new MedmmvError("CONFIG_MISSING", `${t.spec} needs an API key: set ANTHROPIC_API_KEY (or the role's own MEDMMV_<ROLE>_API_KEY)`);
    return new (integration.get().CachingChatAnthropic)({
      ...commonOptions(t, undefined),
      ...unitTemperature(temperature),
      ...(maxTokens !== undefined ? { maxTokens } : {}),
      apiKey: t.apiKey,
      anthropicApiUrl: t.baseUrl ?? ANTHROPIC_DEFAULT_BASE_URL,
      // The SDK's fetch is wrapped for the size cap and the reply tap (model-fetch.ts).
      clientOptions: { timeout: sdkTimeoutMs(cfg), fetch: guardedFetch() },
    });
  },
};
