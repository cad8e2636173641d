import { z } from "zod";
import { catalogEntry } from "./model-catalog.js";
import { parseModelSpec } from "./model-spec.js";

/**
 * What medmmv knows about one configured model before it sends anything: which parameters
 * it takes, how it gives structured output, how many images one request may carry, its
 * limits and its prices. Defaults come from models.dev's catalog (model-catalog.ts); a
 * profiles file or MEDMMV_MODEL_PROFILES overrides them per model (a self-hosted model the
 * catalog cannot know). What a server reveals at run time (model-adaptation.ts) refines it.
 */

export const STRUCTURED_METHODS = ["jsonSchema", "functionCalling", "jsonMode"] as const;
export type StructuredMethod = (typeof STRUCTURED_METHODS)[number];
export const REASONING_EFFORTS = ["minimal", "low", "medium", "high"] as const;
export type ReasoningEffort = (typeof REASONING_EFFORTS)[number];
export type TokenParameter = "max_tokens" | "max_completion_tokens";

export interface ModelProfile {
  model: string;
  /** Where the defaults came from: the catalog's provider, or null for a model it does not know. */
  catalog: string | null;
  /** Takes a temperature (and top_p) other than its default; false: none is sent. */
  temperature: boolean;
  /** The name of the output budget parameter this model takes. */
  tokenParameter: TokenParameter;
  reasoning: boolean;
  /** Sent as reasoning_effort to a reasoning model when set (MEDMMV_REASONING_EFFORT, per role). */
  reasoningEffort: ReasoningEffort | null;
  /** The structured-output modes to try, best first; the first is used until the server shows it does not work. */
  structuredOutput: StructuredMethod[];
  /** Most images one request may carry (0: none, a text-only model); null: no known limit. */
  imagesPerRequest: number | null;
  contextWindow: number | null;
  outputLimit: number | null;
  /** USD per million tokens (the catalog's, or MEDMMV_PRICES / MEDMMV_PRICES_FILE); null: unpriced. */
  price: { input: number; output: number; cachedInput?: number } | null;
}

/** One model's overrides in MEDMMV_MODEL_PROFILES / MEDMMV_MODEL_PROFILES_FILE (every field optional). */
export const ModelProfileOverride = z
  .object({
    temperature: z.boolean().optional(),
    tokenParameter: z.enum(["max_tokens", "max_completion_tokens"]).optional(),
    reasoning: z.boolean().optional(),
    structuredOutput: z.array(z.enum(STRUCTURED_METHODS)).min(1).optional(),
    // 0: a text-only model; its calls go without images (compose-images.ts), said in provenance.
    imagesPerRequest: z.number().int().min(0).nullable().optional(),
    contextWindow: z.number().int().min(1).nullable().optional(),
    outputLimit: z.number().int().min(1).nullable().optional(),
  })
  .strict();
export type ModelProfileOverride = z.infer<typeof ModelProfileOverride>;
export const ModelProfileOverrides = z.record(z.string(), ModelProfileOverride);
export type ModelProfileOverrides = z.infer<typeof ModelProfileOverrides>;

/** The modes after `first`, in the order a server that ignores or rejects one falls back to. */
export function modesFrom(first: StructuredMethod): StructuredMethod[] {
  return STRUCTURED_METHODS.slice(STRUCTURED_METHODS.indexOf(first));
}

export interface ProfileInputs {
  structuredOutput: StructuredMethod;
  profiles: ModelProfileOverrides;
  prices: Record<string, { input: number; output: number; cachedInput?: number }>;
}

/** The profile of `model`: catalog defaults, then the operator's overrides. */
export function resolveProfile(model: string, inputs: ProfileInputs, reasoningEffort: ReasoningEffort | null = null): ModelProfile {
  const entry = catalogEntry(model);
  const own = inputs.profiles[model] ?? {};
  const reasoning = own.reasoning ?? entry?.reasoning ?? false;
  // OpenAI's reasoning models take only their default temperature, and max_completion_tokens.
  const temperature = own.temperature ?? entry?.temperature ?? true;
  const openAiFamily = entry?.provider === "openai" || entry?.provider === "azure";
  const tokenParameter = own.tokenParameter ?? (openAiFamily && reasoning && !temperature ? "max_completion_tokens" : "max_tokens");
  let structuredOutput = own.structuredOutput ?? modesFrom(inputs.structuredOutput);
  if (!own.structuredOutput && entry && !entry.toolCall) structuredOutput = structuredOutput.filter((m) => m !== "functionCalling");
  return {
    model,
    catalog: entry?.provider ?? null,
    temperature,
    tokenParameter,
    reasoning,
    reasoningEffort: reasoning ? reasoningEffort : null,
    structuredOutput,
    // The catalog's text-only models (DeepSeek's) take no images: their calls go without them rather than be refused.
    imagesPerRequest: own.imagesPerRequest !== undefined ? own.imagesPerRequest : entry && !entry.imageInput ? 0 : null,
    contextWindow: own.contextWindow !== undefined ? own.contextWindow : (entry?.contextWindow ?? null),
    outputLimit: own.outputLimit !== undefined ? own.outputLimit : (entry?.outputLimit ?? null),
    price: inputs.prices[model] ?? null,
  };
}

/** The catalog's prices of the configured models it knows (an unknown model gets none). */
export function catalogPrices(models: ReadonlyArray<string | null>): Record<string, { input: number; output: number; cachedInput?: number }> {
  const out: Record<string, { input: number; output: number; cachedInput?: number }> = {};
  for (const m of new Set(models)) {
    if (!m) continue;
    const price = catalogEntry(m)?.price;
    if (price) out[m] = price;
  }
  return out;
}

/** What the chat-model constructor is given for one model, temperature and output budget. */
export interface ChatModelSettings {
  temperature?: number;
  maxTokens?: number;
  modelKwargs?: Record<string, unknown>;
}

/** LangChain's own guess of which models take max_completion_tokens (@langchain/openai's isReasoningModel). */
function langChainSendsCompletionTokens(model: string): boolean {
  return /^o\d/.test(model) || (model.startsWith("gpt-5") && !model.startsWith("gpt-5-chat"));
}

/**
 * The constructor parameters of an OpenAI-compatible chat model under this profile: no
 * temperature where the model takes only its default, the output budget under the name the
 * model takes, and reasoning_effort for a reasoning model. LangChain picks the budget's name
 * and sends reasoning_effort by the model's name alone, which an Azure deployment or a
 * proxy's alias does not follow: where the profile disagrees, the parameter goes as a kwarg.
 */
export function chatModelSettings(profile: ModelProfile, temperature: number, maxOutputTokens: number | null): ChatModelSettings {
  const out: ChatModelSettings = {};
  const kwargs: Record<string, unknown> = {};
  if (profile.temperature) out.temperature = temperature;
  if (maxOutputTokens !== null) {
    const langChainName: TokenParameter = langChainSendsCompletionTokens(parseModelSpec(profile.model).model) ? "max_completion_tokens" : "max_tokens";
    if (langChainName === profile.tokenParameter) out.maxTokens = maxOutputTokens;
    else kwargs[profile.tokenParameter] = maxOutputTokens;
  }
  if (profile.reasoning && profile.reasoningEffort) kwargs.reasoning_effort = profile.reasoningEffort;
  if (Object.keys(kwargs).length) out.modelKwargs = kwargs;
  return out;
}
