import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { Config } from "../config.js";
import { MedmmvError } from "../contracts/errors.js";
import { current, resolveCall, type ResolvedCall, type Role } from "./call-route.js";
import { chatModelSettings, type ChatModelSettings } from "./model-profile.js";

export type { Role } from "./call-route.js";
export type { StructuredMethodOf } from "./providers/provider-module.js";
export { OPENAI_DEFAULT_BASE_URL } from "./providers/openai.js";
export { ANTHROPIC_DEFAULT_BASE_URL } from "./providers/anthropic.js";
export { GOOGLE_GENAI_DEFAULT_BASE_URL } from "./providers/google-genai.js";

/** A chat model of the embedding program's own: one model, or one per temperature medmmv asks for. */
export type ChatModelFactory = (want: { role: Role; temperature: number }) => BaseChatModel;
export type ChatModelSource = BaseChatModel | ChatModelFactory;

/** The variable that names each role's model, for messages that say what to fix. */
export const MODEL_VARIABLE: Record<Role, string> = { executor: "MEDMMV_MODEL", vision: "MEDMMV_VISION_MODEL", judge: "MEDMMV_JUDGE_MODEL" };

/**
 * The chat model behind each role: its provider's (providers/registry.ts: ChatOpenAI on an
 * OpenAI-compatible endpoint, AzureChatOpenAI, LangChain's own ChatAnthropic,
 * ChatGoogleGenerativeAI and ChatBedrockConverse), or what the embedding program handed in. Each
 * role may name its own provider, endpoint and key (a mixed-vendor panel), and the rollouts may
 * be spread over several models (`rolloutModel`).
 * A call's role and model are resolved once (`resolve`, call-route.ts) and the value is reused
 * until its server teaches something. One chat model per (role, model, settings: temperature,
 * output budget, reasoning effort), built on first use and reused: a chat model holds its SDK
 * client (and its keep-alive connections), and ChatOpenAI has no per-call temperature.
 */
export class RoleModels {
  private readonly built = new Map<string, BaseChatModel>();
  /** Each (role, model) as resolved, brought up to date with what its server taught on every `resolve`. */
  private readonly resolved = new Map<string, ResolvedCall>();
  /** The names of the embedding program's models (read from the model once). */
  private readonly customNames = new Map<Role, string>();

  constructor(
    private readonly cfg: Config["llm"],
    private readonly custom: Partial<Record<Role, ChatModelSource>> = {},
  ) {}

  /** The model name recorded in provenance, usage and cache keys. */
  name(role: Role): string {
    if (this.custom[role] !== undefined) {
      let named = this.customNames.get(role);
      if (named === undefined) {
        const m = this.own(role, 0);
        const model = (m as unknown as { model?: unknown }).model;
        named = typeof model === "string" && model ? model : m.getName();
        this.customNames.set(role, named);
      }
      return named;
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
   * A call of `role` on `spec` (another model than the role's own: a rollout model; unset, the
   * role's), as it stands now. Resolved the first time; later only brought up to date with what
   * its server taught since (the same value while nothing was).
   */
  resolve(role: Role, spec?: string): ResolvedCall {
    const key = spec === undefined ? role : `${role}|${spec}`;
    const known = this.resolved.get(key);
    const now = known ? current(known) : resolveCall(this.cfg, role, spec ?? this.name(role), this.custom[role] !== undefined && (spec === undefined || spec === this.name(role)));
    if (now !== known) this.resolved.set(key, now);
    return now;
  }

  /** Loads what `get` needs to build the call's model: its provider's integration. */
  async ready(call: ResolvedCall): Promise<void> {
    await call.module?.load?.();
  }

  /**
   * The chat model of a call at a temperature. `maxOutputTokens`: the output budget to send
   * (null: none, the server's default). A provider with an integration of its own needs `ready` awaited first.
   */
  get(call: ResolvedCall, temperature: number, maxOutputTokens: number | null = null): BaseChatModel {
    if (call.custom || call.module === null) return this.own(call.role, temperature);
    // Models on our own wire are built to the model's profile (model-profile.ts): what it takes, and
    // what its server has shown. The other providers' integrations take both as they are.
    const settings: ChatModelSettings = call.profile ? chatModelSettings(call.profile, temperature, maxOutputTokens) : { temperature, ...(maxOutputTokens !== null ? { maxTokens: maxOutputTokens } : {}) };
    const key = `${call.role}|${call.spec}|${JSON.stringify(settings)}`;
    let m = this.built.get(key);
    if (!m) {
      m = call.module.build({ spec: call.spec, model: call.model, baseUrl: call.baseUrl, apiKey: call.apiKey }, settings, this.cfg);
      this.built.set(key, m);
    }
    return m;
  }

  /** The embedding program's model of a role; a factory is asked once per role and temperature, like the models built here. */
  private own(role: Role, temperature: number): BaseChatModel {
    const key = `${role}|custom|${temperature}`;
    let m = this.built.get(key);
    if (!m) {
      const source = this.custom[role]!;
      m = typeof source === "function" ? source({ role, temperature }) : source;
      this.built.set(key, m);
    }
    return m;
  }
}
