import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { AzureChatOpenAI, ChatOpenAI } from "@langchain/openai";
import type { Config } from "../config.js";
import { MedmmvError } from "../contracts/errors.js";
import { guardedFetch } from "./model-fetch.js";
import { parseModelSpec, type ModelProvider } from "./model-spec.js";
import type { ChatModelSettings } from "./model-profile.js";
import { roleModelSettings } from "./role-profiles.js";

export type Role = "executor" | "vision" | "judge";

/** A chat model of the embedding program's own: one model, or one per temperature medmmv asks for. */
export type ChatModelFactory = (want: { role: Role; temperature: number }) => BaseChatModel;
export type ChatModelSource = BaseChatModel | ChatModelFactory;

export const OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1";
/** AZURE_OPENAI_API_VERSION's default (config.ts), for an azure_openai: model named without the Azure settings' version. */
const AZURE_DEFAULT_API_VERSION = "2024-10-21";

/** The variable that names each role's model, for messages that say what to fix. */
export const MODEL_VARIABLE: Record<Role, string> = { executor: "MEDMMV_MODEL", vision: "MEDMMV_VISION_MODEL", judge: "MEDMMV_JUDGE_MODEL" };

/** How each provider's chat model asks for JSON (withStructuredOutput's method), where it is not ours to render. */
export type StructuredMethodOf = "functionCalling" | "jsonSchema";

/** Where one model's requests go: provider, wire name, endpoint and key. */
export interface ModelTarget {
  /** As configured, prefix included: the name provenance, usage and prices use. */
  spec: string;
  model: string;
  provider: ModelProvider;
  baseUrl: string | null;
  apiKey: string | null;
}

export const ANTHROPIC_DEFAULT_BASE_URL = "https://api.anthropic.com";
export const GOOGLE_GENAI_DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com";

/**
 * Anthropic's and Gemini's LangChain integrations, with their SDKs (~0.8 MB of code to compile),
 * are imported the first time a model of theirs is about to be called (`RoleModels.ready`): a
 * process whose models are all on OpenAI-compatible endpoints never loads them.
 */
const integrations: {
  anthropic?: typeof import("./anthropic-chat-model.js");
  google?: typeof import("./gemini-chat-model.js");
  bedrock?: typeof import("./bedrock-chat-model.js");
  vertex?: typeof import("./vertex-chat-model.js");
} = {};

async function loadIntegration(provider: ModelProvider): Promise<void> {
  if (provider === "anthropic") integrations.anthropic ??= await import("./anthropic-chat-model.js");
  else if (provider === "google-genai") integrations.google ??= await import("./gemini-chat-model.js");
  else if (provider === "bedrock") integrations.bedrock ??= await import("./bedrock-chat-model.js");
  else if (provider === "google-vertexai") integrations.vertex ??= await import("./vertex-chat-model.js");
}

function integration<K extends keyof typeof integrations>(name: K): NonNullable<(typeof integrations)[K]> {
  const loaded = integrations[name];
  if (!loaded) throw new MedmmvError("INTERNAL", `the ${name} chat model was asked for before RoleModels.ready() loaded its integration`);
  return loaded;
}

/**
 * The chat model behind each role: `ChatOpenAI` on an OpenAI-compatible endpoint,
 * `AzureChatOpenAI` when Azure is configured, LangChain's own `ChatAnthropic` and
 * `ChatGoogleGenerativeAI` for `anthropic:` and `google-genai:` models, or what the embedding
 * program handed in. Each role may name its own provider, endpoint and key (a mixed-vendor
 * panel), and the rollouts may be spread over several models (`rolloutModel`).
 * One instance per (role, model, settings: temperature, output budget, reasoning effort), built
 * on first use and reused: a chat model holds its SDK client (and its keep-alive connections),
 * and ChatOpenAI has no per-call temperature.
 */
export class RoleModels {
  private readonly built = new Map<string, BaseChatModel>();

  constructor(
    private readonly cfg: Config["llm"],
    private readonly custom: Partial<Record<Role, ChatModelSource>> = {},
  ) {}

  /** Whether the call goes to a chat model of the embedding program's (a rollout model named in config does not). */
  isCustom(role: Role, spec?: string): boolean {
    return this.custom[role] !== undefined && (spec === undefined || spec === this.name(role));
  }

  /** The model name recorded in provenance, usage and cache keys. */
  name(role: Role): string {
    if (this.custom[role] !== undefined) {
      const m = this.get(role, 0);
      const named = (m as unknown as { model?: unknown }).model;
      return typeof named === "string" && named ? named : m.getName();
    }
    const m = this.cfg.models[role];
    if (!m) throw new MedmmvError("CONFIG_MISSING", `no model configured for the ${role} role: set ${role === "executor" ? "MEDMMV_MODEL" : `MEDMMV_MODEL (or ${MODEL_VARIABLE[role]})`}`);
    return m;
  }

  /** The model rollout `index` runs on: MEDMMV_ROLLOUT_MODELS round-robin, else the executor's. */
  rolloutModel(index: number): string {
    const list = this.cfg.rolloutModels;
    return list.length ? list[index % list.length]! : this.name("executor");
  }

  /**
   * Provider, endpoint and key of a role's model, or of another model the role's calls run on
   * (a rollout model). A role's own MEDMMV_<ROLE>_BASE_URL / _API_KEY apply to the role's own
   * model only; a role with its own URL gets only its own key (a provider's key is never sent
   * to another endpoint).
   */
  target(role: Role, spec: string = this.name(role)): ModelTarget {
    const parsed = parseModelSpec(spec);
    const provider: ModelProvider = parsed.provider ?? (this.cfg.azure ? "azure_openai" : "openai");
    const own = spec === this.cfg.models[role] ? this.cfg.roleEndpoints[role] : { baseUrl: null, apiKey: null };
    const defaults =
      provider === "anthropic"
        ? this.cfg.anthropic
        : provider === "google-genai"
          ? this.cfg.google
          : provider === "bedrock"
            ? { baseUrl: this.cfg.bedrock?.endpoint ?? null, apiKey: null }
            : provider === "google-vertexai"
            ? { baseUrl: this.cfg.vertex?.endpoint ?? null, apiKey: null }
            : provider === "azure_openai"
            ? { baseUrl: this.cfg.azure?.endpoint ?? (this.cfg.azure?.instanceName ? `https://${this.cfg.azure.instanceName}.openai.azure.com` : null), apiKey: this.cfg.azure?.apiKey ?? null }
            : { baseUrl: this.cfg.baseUrl, apiKey: this.cfg.apiKey };
    return own.baseUrl ? { spec, model: parsed.model, provider, baseUrl: own.baseUrl, apiKey: own.apiKey } : { spec, model: parsed.model, provider, baseUrl: defaults.baseUrl, apiKey: own.apiKey ?? defaults.apiKey };
  }

  /**
   * How a call to this model asks for JSON: null for our own OpenAI-compatible and Azure
   * models (structured-output.ts renders the call options), else the method the provider's
   * LangChain integration is asked for. Anthropic: a forced tool call, which every Claude
   * model takes (its json_schema output format only some); Gemini: its responseSchema unless
   * function calling was configured (neither integration has a JSON mode).
   */
  structuredMethod(role: Role, spec?: string): StructuredMethodOf | null {
    if (this.isCustom(role, spec)) return null;
    const { provider } = this.target(role, spec);
    // Bedrock's Converse API asks for JSON by a forced tool (toolChoice), which ChatBedrockConverse renders.
    if (provider === "anthropic" || provider === "bedrock") return "functionCalling";
    // Gemini on Vertex AI as on the Gemini API: responseSchema, or a forced function call when configured.
    if (provider === "google-genai" || provider === "google-vertexai") return this.cfg.structuredOutput === "functionCalling" ? "functionCalling" : "jsonSchema";
    return null;
  }

  /** Where requests of a role go, for error messages; null for a model of the embedding program's. */
  endpoint(role: Role, spec?: string): string | null {
    if (this.isCustom(role, spec)) return null;
    const t = this.target(role, spec);
    if (t.provider === "anthropic") return `${(t.baseUrl ?? ANTHROPIC_DEFAULT_BASE_URL).replace(/\/+$/, "")}/v1/messages`;
    if (t.provider === "google-genai") return `${(t.baseUrl ?? GOOGLE_GENAI_DEFAULT_BASE_URL).replace(/\/+$/, "")}/v1beta/models/${t.model}:generateContent`;
    if (t.provider === "azure_openai") return `${t.baseUrl ?? "https://<AZURE_OPENAI_API_INSTANCE_NAME>.openai.azure.com"}/openai/deployments/${t.model}/chat/completions`;
    if (t.provider === "bedrock") return `${t.baseUrl ?? `https://bedrock-runtime.${this.cfg.bedrock?.region ?? "<AWS_REGION>"}.amazonaws.com`}/model/${encodeURIComponent(t.model)}/converse`;
    if (t.provider === "google-vertexai") return vertexEndpoint(this.cfg.vertex, t);
    return `${(t.baseUrl ?? OPENAI_DEFAULT_BASE_URL).replace(/\/+$/, "")}/chat/completions`;
  }

  /** Loads what `get` needs to build the model of a role (or a rollout model): its provider's integration. */
  async ready(role: Role, spec?: string): Promise<void> {
    if (!this.isCustom(role, spec)) await loadIntegration(this.target(role, spec).provider);
  }

  /**
   * `spec`: another model than the role's own (a rollout model); unset, the role's.
   * `maxOutputTokens`: the output budget to send (null: none, the server's default).
   * An Anthropic or Gemini model needs `ready` awaited first.
   */
  get(role: Role, temperature: number, spec?: string, maxOutputTokens: number | null = null): BaseChatModel {
    const own = this.custom[role];
    const useOwn = own !== undefined && (spec === undefined || this.isCustom(role, spec));
    const t = useOwn ? null : this.target(role, spec);
    // OpenAI-compatible and Azure models are built to the model's profile (model-profile.ts): what it
    // takes, and what its server has shown. Anthropic's and Gemini's integrations take both as they are.
    const settings: ChatModelSettings | null =
      t === null
        ? null
        : t.provider === "openai" || t.provider === "azure_openai"
          ? roleModelSettings(this.cfg, role, t.spec, this.endpoint(role, spec)!, temperature, maxOutputTokens)
          : { temperature, ...(maxOutputTokens !== null ? { maxTokens: maxOutputTokens } : {}) };
    const key = t === null ? `${role}|custom|${temperature}` : `${role}|${t.spec}|${JSON.stringify(settings)}`;
    let m = this.built.get(key);
    if (!m) {
      // A factory is asked once per role and temperature, like the models built here.
      m = t === null ? (typeof own === "function" ? own({ role, temperature }) : own!) : this.build(t, settings!);
      this.built.set(key, m);
    }
    return m;
  }

  private build(t: ModelTarget, settings: ChatModelSettings): BaseChatModel {
    const { temperature, maxTokens, modelKwargs } = settings;
    const common = {
      model: t.model,
      ...(temperature !== undefined ? { temperature } : {}),
      // Our retry layer is the only one (docs/configuration.md): none in LangChain's caller (the SDK's
      // own is set to 0 by LangChain). Never streaming: with streaming, ChatOpenAI counts
      // tokens with a tiktoken file it downloads (docs/architecture.md#known-pitfalls).
      maxRetries: 0,
      streaming: false,
    };
    // The per-attempt timeout is ours (an abort at MEDMMV_LLM_TIMEOUT_MS); the SDK's is a
    // backstop set later, so that a timeout is always reported as ours.
    const timeout = this.cfg.timeoutMs + 5_000;
    // The output budget under the name the model takes, and reasoning_effort, where LangChain would not send them so.
    const openAiBudget = { ...(maxTokens !== undefined ? { maxTokens } : {}), ...(modelKwargs ? { modelKwargs } : {}) };
    // Config refuses these at load (config.ts); a program that builds its own Config gets a typed error too.
    if ((t.provider === "anthropic" || t.provider === "google-genai") && !t.apiKey)
      throw new MedmmvError("CONFIG_MISSING", `${t.spec} needs an API key: set ${t.provider === "anthropic" ? "ANTHROPIC_API_KEY" : "GOOGLE_API_KEY"} (or the role's own MEDMMV_<ROLE>_API_KEY)`);
    if (t.provider === "anthropic")
      return new (integration("anthropic").CachingChatAnthropic)({
        ...common,
        // Anthropic's temperature runs from 0 to 1 (OpenAI's to 2): a higher rollout temperature is its most random.
        ...(temperature !== undefined ? { temperature: Math.min(temperature, 1) } : {}),
        ...(maxTokens !== undefined ? { maxTokens } : {}),
        apiKey: t.apiKey ?? undefined,
        anthropicApiUrl: t.baseUrl ?? ANTHROPIC_DEFAULT_BASE_URL,
        // The SDK's fetch is wrapped for the size cap and the reply tap (model-fetch.ts).
        clientOptions: { timeout, fetch: guardedFetch() },
      });
    // Gemini's SDK takes no fetch of ours: its replies have no size cap or reply tap (usage comes from
    // LangChain's usage metadata), and its timeout is our per-attempt abort alone (gemini-chat-model.ts).
    if (t.provider === "google-genai")
      return new (integration("google").AbortableChatGoogleGenerativeAI)({ ...common, ...(maxTokens !== undefined ? { maxOutputTokens: maxTokens } : {}), apiKey: t.apiKey ?? undefined, baseUrl: t.baseUrl ?? GOOGLE_GENAI_DEFAULT_BASE_URL });
    if (t.provider === "bedrock") {
      const region = this.cfg.bedrock?.region;
      if (!region) throw new MedmmvError("CONFIG_MISSING", `${t.spec} is an Amazon Bedrock model: set AWS_REGION (credentials come from the AWS chain: an IAM role, AWS_PROFILE or AWS_ACCESS_KEY_ID)`);
      return integration("bedrock").bedrockChatModel({ model: t.model, region, endpoint: t.baseUrl, ...(temperature !== undefined ? { temperature: Math.min(temperature, 1) } : {}), ...(maxTokens !== undefined ? { maxTokens } : {}), timeoutMs: timeout });
    }
    if (t.provider === "google-vertexai") {
      const v = this.cfg.vertex;
      if (!v?.project) throw new MedmmvError("CONFIG_MISSING", `${t.spec} is a Vertex AI model: set GOOGLE_CLOUD_PROJECT (and GOOGLE_CLOUD_LOCATION; credentials come from Application Default Credentials: GOOGLE_APPLICATION_CREDENTIALS or the attached service account)`);
      return integration("vertex").vertexChatModel({ model: t.model, project: v.project, location: v.location, endpoint: t.baseUrl, ...(temperature !== undefined ? { temperature } : {}), ...(maxTokens !== undefined ? { maxTokens } : {}) });
    }
    if (t.provider === "azure_openai") {
      const az = this.cfg.azure;
      if (!t.apiKey || !t.baseUrl) throw new MedmmvError("CONFIG_MISSING", `${t.spec} is an Azure OpenAI deployment: set AZURE_OPENAI_API_KEY and AZURE_OPENAI_ENDPOINT (or AZURE_OPENAI_API_INSTANCE_NAME)`);
      return new AzureChatOpenAI({
        ...common,
        ...openAiBudget,
        timeout,
        azureOpenAIApiKey: t.apiKey,
        azureOpenAIApiDeploymentName: t.model,
        azureOpenAIApiVersion: az?.apiVersion ?? AZURE_DEFAULT_API_VERSION,
        azureOpenAIEndpoint: t.baseUrl,
        configuration: { fetch: guardedFetch() },
      });
    }
    return new ChatOpenAI({
      ...common,
      ...openAiBudget,
      timeout,
      // A local server (vLLM, Ollama) needs no key, but the SDK refuses to run without one:
      // a placeholder, which guardedFetch keeps off the wire.
      apiKey: t.apiKey ?? "no-key",
      configuration: { baseURL: t.baseUrl ?? OPENAI_DEFAULT_BASE_URL, fetch: guardedFetch({ withoutAuthorization: t.apiKey === null }) },
    });
  }
}

/**
 * What a failure message tells the operator to check, by where the call went: the variables
 * of its provider, or the role's own MEDMMV_<ROLE>_* where the role has them.
 */
export function providerVariables(roles: RoleModels, role: Role, spec?: string): { azure: boolean; variables?: { url: string; key: string } } {
  if (roles.isCustom(role, spec)) return { azure: false };
  const { provider } = roles.target(role, spec);
  const native = NATIVE_VARIABLES[provider];
  if (!native) return { azure: provider === "azure_openai" };
  const ROLE = role.toUpperCase();
  return { azure: false, variables: { url: `${native.url} (or MEDMMV_${ROLE}_BASE_URL)`, key: `${native.key} (or MEDMMV_${ROLE}_API_KEY)` } };
}

const NATIVE_VARIABLES: Partial<Record<ModelProvider, { url: string; key: string }>> = {
  anthropic: { url: "ANTHROPIC_BASE_URL", key: "ANTHROPIC_API_KEY" },
  "google-genai": { url: "GOOGLE_GENAI_BASE_URL", key: "GOOGLE_API_KEY" },
  bedrock: { url: "MEDMMV_BEDROCK_ENDPOINT / AWS_REGION", key: "the AWS credential chain (the IAM role, AWS_PROFILE, or AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY)" },
  "google-vertexai": { url: "MEDMMV_VERTEX_ENDPOINT / GOOGLE_CLOUD_LOCATION / GOOGLE_CLOUD_PROJECT", key: "Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS, or the attached service account) and its roles/aiplatform.user" },
};

/** Vertex AI's generateContent URL for a google-vertexai:… model, as @langchain/google-vertexai builds it (for messages and first-contact keys). */
function vertexEndpoint(v: Config["llm"]["vertex"], t: ModelTarget): string {
  const location = v?.location ?? "us-central1";
  // A multi-region (`us`, `eu`) is served by its regional endpoint (…rep.googleapis.com), a region by <region>-aiplatform.
  const host = t.baseUrl?.replace(/^https:\/\//i, "").replace(/\/+$/, "") ?? (location === "global" ? "aiplatform.googleapis.com" : location.includes("-") ? `${location}-aiplatform.googleapis.com` : `aiplatform.${location}.rep.googleapis.com`);
  return `https://${host}/v1/projects/${v?.project ?? "<GOOGLE_CLOUD_PROJECT>"}/locations/${location}/publishers/google/models/${t.model}:generateContent`;
}
