import { ChatOpenAI } from "@langchain/openai";
import { guardedFetch } from "../model-fetch.js";
import { commonOptions, keyHeader, sdkTimeoutMs, trimmed, type ProviderModule } from "./provider-module.js";

export const OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1";

/**
 * Any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, Ollama, llama.cpp, TGI, a
 * gateway): OPENAI_BASE_URL and OPENAI_API_KEY. An unprefixed model name lands here unless Azure
 * is configured. Built to the model's profile (model-profile.ts): the output budget under the
 * name the model takes, and reasoning_effort, where LangChain would not send them so.
 */
export const openai: ProviderModule = {
  id: "openai",
  defaults: (cfg) => ({ baseUrl: cfg.baseUrl, apiKey: cfg.apiKey }),
  endpointUrl: (t) => `${trimmed(t.baseUrl ?? OPENAI_DEFAULT_BASE_URL)}/chat/completions`,
  structuredMethod: () => null,
  structuredMethods: () => [],
  chatCompletionsRequest: (t, cfg) => ({ url: openai.endpointUrl(t, cfg), headers: keyHeader("authorization", t.apiKey && `Bearer ${t.apiKey}`) }),
  build: (t, { temperature, maxTokens, modelKwargs }, cfg) =>
    new ChatOpenAI({
      ...commonOptions(t, temperature),
      ...(maxTokens !== undefined ? { maxTokens } : {}),
      ...(modelKwargs ? { modelKwargs } : {}),
      timeout: sdkTimeoutMs(cfg),
      // A local server (vLLM, Ollama) needs no key, but the SDK refuses to run without one:
      // a placeholder, which guardedFetch keeps off the wire.
      apiKey: t.apiKey ?? "no-key",
      configuration: { baseURL: t.baseUrl ?? OPENAI_DEFAULT_BASE_URL, fetch: guardedFetch({ withoutAuthorization: t.apiKey === null }) },
    }),
};
