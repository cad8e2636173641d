import type { Config } from "../config.js";
import { adapted } from "./model-adaptation.js";
import { chatModelSettings, resolveProfile, type ChatModelSettings, type ModelProfile } from "./model-profile.js";

type Role = "executor" | "vision" | "judge";

const resolved = new WeakMap<Config["llm"], Map<string, ModelProfile>>();

/**
 * The profile a role's model runs under now: the configured profile (catalog, then the
 * operator's overrides, with the role's reasoning effort) with what its endpoint has shown
 * since applied.
 */
export function roleProfile(cfg: Config["llm"], role: Role, model: string, endpoint: string): ModelProfile {
  let byKey = resolved.get(cfg);
  if (!byKey) {
    byKey = new Map();
    resolved.set(cfg, byKey);
  }
  const key = `${role}|${model}`;
  let profile = byKey.get(key);
  if (!profile) {
    profile = resolveProfile(model, { structuredOutput: cfg.structuredOutput, profiles: cfg.profiles ?? {}, prices: cfg.prices }, cfg.reasoningEffort?.[role] ?? null);
    byKey.set(key, profile);
  }
  return adapted(profile, endpoint);
}

/** The chat-model constructor parameters of a role's model at a temperature and output budget (null: none sent). */
export function roleModelSettings(cfg: Config["llm"], role: Role, model: string, endpoint: string, temperature: number, maxOutputTokens: number | null): ChatModelSettings {
  return chatModelSettings(roleProfile(cfg, role, model, endpoint), temperature, maxOutputTokens);
}
