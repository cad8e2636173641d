import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { AzureChatOpenAI, ChatOpenAI } from "@langchain/openai";
import type { Config } from "../config.js";
import { MedmmvError } from "../contracts/errors.js";
import { guardedFetch } from "./model-fetch.js";
import type { ChatModelSettings } from "./model-profile.js";
import { roleModelSettings } from "./role-profiles.js";

export type Role = "executor" | "vision" | "judge";

/** A chat model of the embedding program's own: one model, or one per temperature medmmv asks for. */
export type ChatModelFactory = (want: { role: Role; temperature: number }) => BaseChatModel;
export type ChatModelSource = BaseChatModel | ChatModelFactory;

export const OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1";

/** The variable that names each role's model, for messages that say what to fix. */
export const MODEL_VARIABLE: Record<Role, string> = { executor: "MEDMMV_MODEL", vision: "MEDMMV_VISION_MODEL", judge: "MEDMMV_JUDGE_MODEL" };

/**
 * The chat model behind each role: `ChatOpenAI` on an OpenAI-compatible endpoint, or
 * `AzureChatOpenAI` when Azure is configured, or what the embedding program handed in.
 * One instance per (role, temperature), built on first use and reused: a chat model holds
 * its SDK client (and its keep-alive connections), and ChatOpenAI has no per-call temperature.
 */
export class RoleModels {
  private readonly built = new Map<string, BaseChatModel>();

  constructor(
    private readonly cfg: Config["llm"],
    private readonly custom: Partial<Record<Role, ChatModelSource>> = {},
  ) {}

  isCustom(role: Role): boolean {
    return this.custom[role] !== undefined;
  }

  /** The model name recorded in provenance, usage and cache keys. */
  name(role: Role): string {
    if (this.isCustom(role)) {
      const m = this.get(role, 0);
      const named = (m as unknown as { model?: unknown }).model;
      return typeof named === "string" && named ? named : m.getName();
    }
    const m = this.cfg.models[role];
    if (!m) throw new MedmmvError("CONFIG_MISSING", `no model configured for the ${role} role: set ${role === "executor" ? "MEDMMV_MODEL" : `MEDMMV_MODEL (or ${MODEL_VARIABLE[role]})`}`);
    return m;
  }

  /** Where requests of a role go, for error messages; null for a model of the embedding program's. */
  endpoint(role: Role): string | null {
    if (this.isCustom(role)) return null;
    const az = this.cfg.azure;
    if (az) return `${az.endpoint ?? `https://${az.instanceName}.openai.azure.com`}/openai/deployments/${this.name(role)}/chat/completions`;
    return `${(this.cfg.baseUrl ?? OPENAI_DEFAULT_BASE_URL).replace(/\/+$/, "")}/chat/completions`;
  }

  /** `maxOutputTokens`: the output budget to send (null: none, the server's default). */
  get(role: Role, temperature: number, maxOutputTokens: number | null = null): BaseChatModel {
    const own = this.custom[role];
    // Our own models are built to the model's profile (model-profile.ts): what it takes, and what its server has shown.
    const settings = own === undefined ? roleModelSettings(this.cfg, role, this.name(role), this.endpoint(role)!, temperature, maxOutputTokens) : null;
    const key = settings ? `${role}|${JSON.stringify(settings)}` : `${role}|${temperature}`;
    let m = this.built.get(key);
    if (!m) {
      // A factory is asked once per role and temperature, like the models built here.
      m = settings ? this.build(this.name(role), settings) : typeof own === "function" ? own({ role, temperature }) : own!;
      this.built.set(key, m);
    }
    return m;
  }

  private build(model: string, settings: ChatModelSettings): BaseChatModel {
    const common = {
      model,
      ...settings,
      // Our retry layer is the only one (docs/configuration.md): none in LangChain's caller (the SDK's
      // own is set to 0 by LangChain). Never streaming: with streaming, ChatOpenAI counts
      // tokens with a tiktoken file it downloads (docs/architecture.md#known-pitfalls).
      maxRetries: 0,
      streaming: false,
      // The per-attempt timeout is ours (an abort at MEDMMV_LLM_TIMEOUT_MS); the SDK's is a
      // backstop set later, so that a timeout is always reported as ours.
      timeout: this.cfg.timeoutMs + 5_000,
    };
    const az = this.cfg.azure;
    if (az)
      return new AzureChatOpenAI({
        ...common,
        azureOpenAIApiKey: az.apiKey,
        azureOpenAIApiDeploymentName: model,
        azureOpenAIApiVersion: az.apiVersion,
        ...(az.endpoint ? { azureOpenAIEndpoint: az.endpoint } : { azureOpenAIApiInstanceName: az.instanceName ?? undefined }),
        configuration: { fetch: guardedFetch() },
      });
    return new ChatOpenAI({
      ...common,
      // A local server (vLLM, Ollama) needs no key, but the SDK refuses to run without one:
      // a placeholder, which guardedFetch keeps off the wire.
      apiKey: this.cfg.apiKey ?? "no-key",
      configuration: { baseURL: this.cfg.baseUrl ?? OPENAI_DEFAULT_BASE_URL, fetch: guardedFetch({ withoutAuthorization: this.cfg.apiKey === null }) },
    });
  }
}
