import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { Config } from "../../config.js";
import { MedmmvError } from "../../contracts/errors.js";
import type { ModelProvider } from "../model-spec.js";
import type { ChatModelSettings } from "../model-profile.js";

/** How a provider's LangChain integration is asked for JSON (withStructuredOutput's method). */
export type StructuredMethodOf = "functionCalling" | "jsonSchema";

/** Where one model's requests go: its provider's wire name, endpoint and key. */
export interface ProviderTarget {
  /** As configured, prefix included: the name provenance, usage and prices use. */
  spec: string;
  /** The provider's own model name, sent on the wire. */
  model: string;
  baseUrl: string | null;
  apiKey: string | null;
}

/**
 * Everything medmmv needs to know about one model provider, in one module (providers/*.ts),
 * listed once in providers/registry.ts. Nothing outside these modules branches on a provider's
 * name: a call is resolved through its provider's module once (call-route.ts), and the
 * transport, the adaptation, the failure messages and `models check` read that.
 */
export interface ProviderModule {
  /** The prefix that names it (initChatModel's), or `openai` for an unprefixed name. */
  readonly id: ModelProvider;
  /** The provider's own endpoint and key in the configuration, before a role's own MEDMMV_<ROLE>_BASE_URL / _API_KEY. */
  defaults(cfg: Config["llm"]): { baseUrl: string | null; apiKey: string | null };
  /**
   * Where a request for `t.model` goes: named in failure messages, and the key under which what
   * the server revealed is learned (model-adaptation.ts).
   */
  endpointUrl(t: Pick<ProviderTarget, "model" | "baseUrl">, cfg: Config["llm"]): string;
  /**
   * How a call asks for JSON. null: ours — the OpenAI chat-completions wire, whose call options
   * structured-output.ts renders, built to the model's profile and what its server has shown
   * (model-profile.ts, model-adaptation.ts), and probed by `models check` request by request.
   * Otherwise the method the provider's LangChain integration is asked for; its integration
   * takes the temperature and output budget as they are, and its server reveals nothing this adapts to.
   * Decided per model (the provider's own name, `t.model`), not per provider: one integration may
   * serve models of more than one family (Vertex AI's Gemini and Claude, which take JSON differently).
   */
  structuredMethod(model: string, cfg: Config["llm"]): StructuredMethodOf | null;
  /** Every method its integration can be asked for on `model` (`models check` tries each); empty on our own wire. */
  structuredMethods(model: string): readonly StructuredMethodOf[];
  /**
   * On the OpenAI chat-completions wire: the URL and headers of a request sent by hand
   * (`models check` probes such a server request by request). Unset: probed through its integration.
   */
  chatCompletionsRequest?(t: Pick<ProviderTarget, "model" | "baseUrl" | "apiKey">, cfg: Config["llm"]): { url: string; headers: Record<string, string> };
  /** The variables naming its endpoint and key, for failure messages; unset: the OpenAI-compatible endpoint's (provider-errors.ts). */
  readonly variables?: { url: string; key: string };
  /** Failure messages speak of Azure deployments and Azure's variables. */
  readonly azure?: true;
  /** Loads its integration (an SDK of its own) before its first model is built; unset: nothing to load. */
  load?(): Promise<void>;
  /** Its LangChain chat model for one target and settings (temperature, output budget, kwargs). `load` has been awaited. */
  build(t: ProviderTarget, settings: ChatModelSettings, cfg: Config["llm"]): BaseChatModel;
}

/**
 * An integration imported the first time one of its models is about to be called: a process
 * whose models are all on OpenAI-compatible endpoints never loads Anthropic's, Gemini's or
 * Bedrock's SDKs (~0.8 MB of code to compile each).
 */
export function lazyIntegration<T>(name: string, importer: () => Promise<T>): { load(): Promise<void>; get(): T } {
  let loaded: T | undefined;
  return {
    async load() {
      loaded ??= await importer();
    },
    get() {
      if (loaded === undefined) throw new MedmmvError("INTERNAL", `the ${name} chat model was asked for before its integration was loaded (RoleModels.ready)`);
      return loaded;
    },
  };
}

/**
 * The SDK's own timeout: a backstop past ours. The per-attempt timeout is ours (an abort at
 * MEDMMV_LLM_TIMEOUT_MS), so that a timeout is always reported as ours.
 */
export function sdkTimeoutMs(cfg: Config["llm"]): number {
  return cfg.timeoutMs + 5_000;
}

/**
 * What every chat model we build is given. Our retry layer is the only one
 * (docs/configuration.md): none in LangChain's caller (the SDK's own is set to 0 by LangChain).
 * Never streaming: with streaming, ChatOpenAI counts tokens with a tiktoken file it downloads
 * (docs/architecture.md#known-pitfalls).
 */
export function commonOptions(t: ProviderTarget, temperature: number | undefined): { model: string; temperature?: number; maxRetries: 0; streaming: false } {
  return { model: t.model, ...(temperature !== undefined ? { temperature } : {}), maxRetries: 0, streaming: false };
}

/** A provider whose temperature runs from 0 to 1 (OpenAI's to 2): a higher rollout temperature is its most random. */
export function unitTemperature(temperature: number | undefined): { temperature?: number } {
  return temperature !== undefined ? { temperature: Math.min(temperature, 1) } : {};
}

/** A header carrying the key, or none without a key (a local server's). */
export function keyHeader(name: string, value: string | null): Record<string, string> {
  return value ? { [name]: value } : {};
}

/** The base URL without trailing slashes. */
export function trimmed(url: string): string {
  return url.replace(/\/+$/, "");
}
