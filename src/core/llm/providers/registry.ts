import type { Config } from "../../config.js";
import type { ModelProvider } from "../model-spec.js";
import { anthropic } from "./anthropic.js";
import { azureOpenai } from "./azure-openai.js";
import { bedrock } from "./bedrock.js";
import { googleGenai } from "./google-genai.js";
import { googleVertexai } from "./google-vertexai.js";
import { openai } from "./openai.js";
import type { ProviderModule } from "./provider-module.js";

/**
 * Every model provider, by the prefix that names it (model-spec.ts MODEL_PROVIDERS). A new
 * provider is one module (providers/<name>.ts) and one line here; the type refuses a name in
 * MODEL_PROVIDERS without its module.
 */
export const PROVIDERS: Readonly<Record<ModelProvider, ProviderModule>> = {
  openai,
  azure_openai: azureOpenai,
  anthropic,
  "google-genai": googleGenai,
  bedrock,
  "google-vertexai": googleVertexai,
};

/** The provider of a model named with `prefix` (null: none, the OpenAI-compatible endpoint, or Azure when Azure is configured). */
export function providerModule(prefix: ModelProvider | null, cfg: Config["llm"]): ProviderModule {
  return PROVIDERS[prefix ?? (cfg.azure ? "azure_openai" : "openai")];
}
