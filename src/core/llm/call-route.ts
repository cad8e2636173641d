import type { Config, Prices } from "../config.js";
import { adaptationOf, learn, withAdaptation, type Adaptation, type Lesson } from "./model-adaptation.js";
import { resolveProfile, type ModelProfile, type StructuredMethod, type TokenParameter } from "./model-profile.js";
import { parseModelSpec, priceOf, type ModelProvider } from "./model-spec.js";
import { catalogEntry } from "./model-catalog.js";
import { providerModule } from "./providers/registry.js";
import type { ProviderModule, ProviderTarget, StructuredMethodOf } from "./providers/provider-module.js";

export type Role = "executor" | "vision" | "judge";

/**
 * One call's model, resolved once: where it goes, with which key, how it asks for JSON, under
 * which profile, and what it costs. The transport (chat-models.ts), the adaptation and the usage
 * meter (model-client.ts) read this value; nothing looks the role or model up again. Immutable:
 * what a server teaches (model-adaptation.ts) gives a new value (`current`, `afterLesson`).
 */
export interface ResolvedCall {
  readonly role: Role;
  /** As configured, prefix included: the name provenance, usage, prices and the adaptation use. */
  readonly spec: string;
  /** A chat model of the embedding program's: no provider, endpoint, profile or price of ours applies. */
  readonly custom: boolean;
  /** The provider's name and module; null for a chat model of the embedding program's. */
  readonly provider: ModelProvider | null;
  readonly module: ProviderModule | null;
  /** The provider's own model name, sent on the wire. */
  readonly model: string;
  readonly baseUrl: string | null;
  readonly apiKey: string | null;
  /** Where its requests go (failure messages; the key of what its server taught); null for the embedding program's model. */
  readonly endpoint: string | null;
  /** How the provider's integration is asked for JSON; null: our own call options (structured-output.ts), or the embedding program's model. */
  readonly structuredMethod: StructuredMethodOf | null;
  /** The model's profile as configured (catalog, then the operator's overrides, the role's reasoning effort); null where the profile does not apply. */
  readonly configuredProfile: ModelProfile | null;
  /** That profile with what its server has shown applied: what the call is built to. */
  readonly profile: ModelProfile | null;
  /** What its server has shown (the value `profile` was adapted with); undefined: nothing yet. */
  readonly adaptation: Adaptation | undefined;
  /** The structured-output mode of our own call options: the profile's first, else the configured one. */
  readonly mode: StructuredMethod;
  /** Most images one request may carry (0: none); null: no known limit. */
  readonly imagesPerRequest: number | null;
  readonly tokenParameter: TokenParameter | null;
  /** USD per million tokens, as MEDMMV_PRICES or the catalog state it; null: unpriced. */
  readonly price: Prices[string] | null;
  /** What a failure message names: Azure's wording, or the provider's own variables. */
  readonly failure: { azure: boolean; variables?: { url: string; key: string } };
}

/**
 * A call of `role` on the model `spec` as configured, before anything its server taught.
 * A role's own MEDMMV_<ROLE>_BASE_URL / _API_KEY apply to the role's own model only; a role with
 * its own URL gets only its own key (a provider's key is never sent to another endpoint).
 */
export function resolveCall(cfg: Config["llm"], role: Role, spec: string, custom: boolean): ResolvedCall {
  const price = priceOf(cfg.prices, spec) ?? null;
  if (custom)
    return { role, spec, custom, provider: null, module: null, model: spec, baseUrl: null, apiKey: null, endpoint: null, structuredMethod: null, configuredProfile: null, profile: null, adaptation: undefined, mode: cfg.structuredOutput, imagesPerRequest: null, tokenParameter: null, price, failure: { azure: false } };
  const parsed = parseModelSpec(spec);
  const module = providerModule(parsed.provider, cfg);
  const own = spec === cfg.models[role] ? cfg.roleEndpoints[role] : { baseUrl: null, apiKey: null };
  const defaults = module.defaults(cfg);
  const target: ProviderTarget = own.baseUrl ? { spec, model: parsed.model, baseUrl: own.baseUrl, apiKey: own.apiKey } : { spec, model: parsed.model, baseUrl: defaults.baseUrl, apiKey: own.apiKey ?? defaults.apiKey };
  const structuredMethod = module.structuredMethod(target.model, cfg);
  const configuredProfile = structuredMethod === null ? resolveProfile(spec, { structuredOutput: cfg.structuredOutput, profiles: cfg.profiles ?? {}, prices: cfg.prices }, cfg.reasoningEffort?.[role] ?? null) : null;
  const ROLE = role.toUpperCase();
  const failure = module.variables ? { azure: false, variables: { url: `${module.variables.url} (or MEDMMV_${ROLE}_BASE_URL)`, key: `${module.variables.key} (or MEDMMV_${ROLE}_API_KEY)` } } : { azure: module.azure === true };
  const endpoint = module.endpointUrl(target, cfg);
  // A provider's own integration is built to no profile of ours, but a model that takes no images is one whatever the
  // wire (a text-only model on Bedrock or Vertex AI): the operator's `imagesPerRequest` (or the catalog's text-only mark) holds for it too.
  const imagesPerRequest = configuredProfile === null ? integrationImageLimit(cfg, spec) : null;
  return withRules({ role, spec, custom, provider: module.id, module, model: target.model, baseUrl: target.baseUrl, apiKey: target.apiKey, endpoint, structuredMethod, configuredProfile, profile: null, adaptation: undefined, mode: cfg.structuredOutput, imagesPerRequest, tokenParameter: null, price, failure }, adaptationOf(endpoint, spec));
}

function integrationImageLimit(cfg: Config["llm"], spec: string): number | null {
  const own = cfg.profiles?.[spec]?.imagesPerRequest;
  if (own !== undefined) return own;
  const entry = catalogEntry(spec);
  return entry && !entry.imageInput ? 0 : null;
}

/** `call` under `adaptation`: its profile, and the mode, image limit and token parameter read from it. */
function withRules(call: ResolvedCall, adaptation: Adaptation | undefined): ResolvedCall {
  const profile = call.configuredProfile === null ? null : withAdaptation(call.configuredProfile, adaptation);
  // A profile's modes are never empty (model-profile.ts); without a profile the mode stays the configured one.
  const mode = profile ? profile.structuredOutput[0]! : call.mode;
  return { ...call, adaptation, profile, mode, imagesPerRequest: profile ? profile.imagesPerRequest : call.imagesPerRequest, tokenParameter: profile?.tokenParameter ?? null };
}

/**
 * The call as it stands now: `call` itself while its server has taught nothing new (the learned
 * value is replaced, never changed, on every lesson: an identity check), else a new value.
 * Another call of the process may have learned a rule meanwhile (a first contact's pioneer).
 */
export function current(call: ResolvedCall): ResolvedCall {
  if (call.endpoint === null) return call;
  const adaptation = adaptationOf(call.endpoint, call.spec);
  return adaptation === call.adaptation ? call : withRules(call, adaptation);
}

/** Whether two profiles differ in a rule a request obeys. */
function rulesDiffer(a: ModelProfile, b: ModelProfile): boolean {
  return a.temperature !== b.temperature || a.tokenParameter !== b.tokenParameter || a.structuredOutput[0] !== b.structuredOutput[0] || a.imagesPerRequest !== b.imagesPerRequest;
}

/**
 * After a server's refusal or behaviour taught `lesson`: the call to send next, or null when
 * there is nothing new to obey (the call gives up rather than loop). Another call may have
 * learned the same lesson meanwhile: then this one already obeys it on the next attempt.
 */
export function afterLesson(call: ResolvedCall, lesson: Lesson): ResolvedCall | null {
  if (call.profile === null || call.endpoint === null) return null;
  const taught = learn(call.endpoint, call.profile, lesson);
  const now = current(call);
  return taught || (now.profile !== null && rulesDiffer(now.profile, call.profile)) ? now : null;
}
