/**
 * A configured model name, read the way LangChain's `initChatModel` names models:
 * `provider:model` for a provider reached through its own integration
 * (`anthropic:claude-sonnet-4-5`, `google-genai:gemini-2.5-flash`, `bedrock:…`,
 * `google-vertexai:gemini-2.5-flash` for Gemini on Vertex AI), or a bare name for the
 * OpenAI-compatible endpoint as before. Only the prefixes below are providers: local
 * servers name models with colons of their own (Ollama's `qwen2.5vl:7b`), and those stay
 * whole, OpenAI-compatible names.
 */
export const MODEL_PROVIDERS = ["openai", "azure_openai", "anthropic", "google-genai", "bedrock", "google-vertexai"] as const;
export type ModelProvider = (typeof MODEL_PROVIDERS)[number];

export interface ModelSpec {
  /** As configured (with its prefix, if any): the name provenance, usage and prices use. */
  spec: string;
  /** The provider's own model name, sent on the wire. */
  model: string;
  /** null: no prefix; the OpenAI-compatible endpoint (or Azure when Azure is configured). */
  provider: ModelProvider | null;
}

/** `google_genai` and `google_vertexai` are initChatModel's older spellings of the same providers. */
const ALIASES: Record<string, ModelProvider> = { google_genai: "google-genai", google_vertexai: "google-vertexai" };

export function parseModelSpec(spec: string): ModelSpec {
  const colon = spec.indexOf(":");
  if (colon > 0) {
    const prefix = spec.slice(0, colon).toLowerCase();
    const provider = (MODEL_PROVIDERS as readonly string[]).includes(prefix) ? (prefix as ModelProvider) : ALIASES[prefix];
    const model = spec.slice(colon + 1).trim();
    if (provider && model) return { spec, model, provider };
  }
  return { spec, model: spec, provider: null };
}


/** A model's prices: under its name as configured (`anthropic:claude-…`) or, failing that, its provider's own name (`claude-…`). */
export function priceOf<P>(prices: Record<string, P>, model: string): P | undefined {
  return prices[model] ?? prices[parseModelSpec(model).model];
}
