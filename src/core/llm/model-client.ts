import { describeZodIssues } from "../contracts/zod-issues.js";
import { createHash } from "node:crypto";
import { BaseCallbackHandler, type CallbackHandlerMethods } from "@langchain/core/callbacks/base";
import type { Callbacks } from "@langchain/core/callbacks/manager";
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { AIMessage, BaseMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import type { z } from "zod";
import type { Config } from "../config.js";
import { MedmmvError } from "../contracts/errors.js";
import type { FairLimiter } from "./limiter.js";
import { withRetry } from "./retry.js";
import { RoleModels, type ChatModelSource, type Role } from "./chat-models.js";
import { afterLesson, current, type ResolvedCall } from "./call-route.js";
import { withReplyTap, type ReplyTap } from "./model-fetch.js";
import { StructuredOutputFormats } from "./structured-output.js";
import { explainProviderFailure, modelFailure } from "./provider-errors.js";
import { rejectionOf, type Rejection } from "./provider-rejection.js";
import { confirmRule, firstContact, learnTruncation, rulesKnownBeforeFirstReply } from "./model-adaptation.js";
import type { StructuredMethod } from "./model-profile.js";
import { fitImages, imageCount } from "./compose-images.js";
import { readReplyJson, readWireJson } from "./reply-json.js";
import { imageBytes, promptChars, textChars, textOf, toLangChainMessages, withImageDetail, type ChatMessage } from "./messages.js";
import { CHARS_PER_TOKEN, MAX_CHARS_PER_TOKEN, truncatedPrompt } from "./context-truncation.js";
import { estimateTokens } from "./token-estimate.js";
import { FORMAT_PROBE_MESSAGES, FormatProbe } from "./format-probe.js";
import type { CallChain, UsageMeter } from "./usage.js";
import { priceOf } from "./model-spec.js";
import { catalogEntry } from "./model-catalog.js";

export type { Role } from "./chat-models.js";

/** Where a call's costs go and which case it belongs to (for fair scheduling). */
export interface CallContext {
  caseKey: string;
  meter: UsageMeter;
  chain: CallChain;
  signal?: AbortSignal;
  /** Whose response cache the call uses (the case's owner in the service); undefined: the shared one. */
  cacheScope?: string;
}

export interface StructuredCall<S extends z.ZodType> {
  role: Role;
  agent: string;
  schema: S;
  /** Schema name sent to the provider (function name / json_schema name). */
  schemaName: string;
  messages: ChatMessage[];
  temperature: number;
  /** Another model than the role's own (a rollout spread over MEDMMV_ROLLOUT_MODELS); unset: the role's. */
  model?: string;
}

export interface ResponseCache {
  get(key: string): Promise<Record<string, unknown> | null>;
  /** `caseKey`: the case the call was for, so the store can remove the reply with the case (it may quote it). */
  put(key: string, value: Record<string, unknown>, caseKey?: string): Promise<void>;
}

export interface LlmClientOptions {
  /** The embedding program's own LangChain chat model per role; the others come from config. */
  chatModels?: Partial<Record<Role, ChatModelSource>>;
  /** LangChain callback handlers given every model run (LangSmith's tracer joins by itself when LANGSMITH_TRACING=true). */
  callbacks?: Callbacks;
}

/** At most this many re-asks after an invalid reply (docs/configuration.md). */
export const MAX_REASKS = 2;

/** One structured call: the reply as the model sent it, and the library's parse of it when it made one. */
interface StructuredRunnable {
  invoke(messages: BaseMessage[], config: RunnableConfig): Promise<{ raw?: BaseMessage; parsed?: unknown }>;
}

/** What one attempt gave: a reply (valid or not is decided after), an unusable one, or a refusal the server explained. */
type Attempt =
  | { raw: AIMessage | undefined; parsed: unknown; tap: ReplyTap; problem: null; rejection?: undefined }
  | { raw: undefined; parsed: undefined; tap: ReplyTap; problem: string; rejection?: undefined }
  | { raw: undefined; parsed: undefined; tap: ReplyTap; problem: null; rejection: Rejection; error: unknown };

/** At most this many lessons (a parameter, a mode, an image limit) one call may learn before it gives up. */
const MAX_LESSONS = 6;

/** Whether a reply holds no JSON object at all: a server that ignored the structured-output mode answered in prose. */
function isProse(raw: AIMessage | undefined, tap: ReplyTap): boolean {
  if (raw?.tool_calls?.length || raw?.invalid_tool_calls?.length || tap.message?.tool_calls?.length) return false;
  const content = raw?.content ?? tap.message?.content;
  const text = typeof content === "string" ? content : Array.isArray(content) ? JSON.stringify(content) : "";
  return text.trim() !== "" && !text.includes("{");
}

/**
 * Why the model stopped, in OpenAI's words, from what a provider's integration put in the reply's
 * metadata: OpenAI's `finish_reason`, Anthropic's `stop_reason` and Bedrock's `stopReason`
 * ("max_tokens"), Gemini's and Vertex AI's `finishReason` / `finish_reason` ("MAX_TOKENS"). A reply
 * cut at its output budget is "length" whichever provider cut it, so it is re-asked with a larger one.
 */
function finishReasonOf(metadata: Record<string, unknown> | undefined): string | undefined {
  const stated = [metadata?.finish_reason, metadata?.stop_reason, metadata?.stopReason, metadata?.finishReason].find((v): v is string => typeof v === "string");
  if (stated === undefined) return undefined;
  return /^max_tokens$/i.test(stated) ? "length" : stated;
}

/** The text of a reply (its content, or its tool call's arguments), for a token estimate. */
function replyText(raw: AIMessage | undefined, tap: ReplyTap): string {
  const content = raw?.content ?? tap.message?.content;
  const text = typeof content === "string" ? content : Array.isArray(content) ? JSON.stringify(content) : "";
  const args = (raw?.tool_calls ?? []).map((c) => JSON.stringify(c.args)).join("") || (tap.message?.tool_calls ?? []).map((c) => String(c.function?.arguments ?? "")).join("");
  return text + args;
}

/** Errors raised after the model replied, on what it replied (the SDK's json_schema parse, a cut-off reply). */
const BAD_OUTPUT_ERRORS = new Set(["SyntaxError", "ZodError", "LengthFinishReasonError", "ContentFilterFinishReasonError", "OutputParserException"]);

function isBadOutput(err: unknown, tap: ReplyTap): boolean {
  const e = err as { status?: unknown; name?: unknown; constructor?: { name?: unknown } };
  if (typeof e?.status === "number") return false;
  return tap.replied || BAD_OUTPUT_ERRORS.has(String(e?.name)) || BAD_OUTPUT_ERRORS.has(String(e?.constructor?.name));
}

/**
 * What was wrong with a reply the library refused, in words safe to log and to send back in
 * the re-ask: never the error's message, which may quote the reply (and so the case).
 */
function describeBadOutput(err: unknown): string {
  const e = err as { name?: unknown; constructor?: { name?: unknown }; issues?: unknown };
  const name = String(e?.constructor?.name === "Error" || !e?.constructor?.name ? e?.name : e.constructor.name);
  if (name === "LengthFinishReasonError") return "the reply was cut off at the length limit before the JSON object ended";
  if (name === "ContentFilterFinishReasonError") return "the reply was stopped by the provider's content filter";
  if (Array.isArray(e?.issues)) return formatZodIssues(err as z.ZodError);
  return `the reply was not valid JSON (${name})`;
}

/**
 * Role-based access to LangChain chat models (ChatOpenAI / AzureChatOpenAI, LangChain's own
 * ChatAnthropic and ChatGoogleGenerativeAI, or the embedding program's own). The wire is the chat model's; what stays ours: one retry layer,
 * a process-wide fair limiter, structured output validated with zod and re-asked at most
 * twice, usage per agent, a content-addressed response cache for deterministic calls, and
 * run names and metadata for tracing.
 */
export class LlmClient {
  private readonly roles: RoleModels;
  /** The call options asking our own models for each schema, rendered once (schema conversion is not free). */
  private readonly formats: StructuredOutputFormats;
  /** Models that ask for JSON their own way (the embedding program's, Anthropic's, Gemini's): structured-output runnables per model, schema and name, built once. */
  private readonly runnables = new WeakMap<BaseChatModel, WeakMap<z.ZodType, Map<string, StructuredRunnable>>>();
  private readonly options: LlmClientOptions;

  constructor(
    private readonly cfg: Config["llm"],
    private readonly limiter: FairLimiter,
    private readonly cache: ResponseCache | null = null,
    options: LlmClientOptions = {},
  ) {
    this.options = { ...options, callbacks: asHandlers(options.callbacks) };
    this.roles = new RoleModels(cfg, options.chatModels);
    this.formats = new StructuredOutputFormats(cfg.structuredOutput);
  }

  /**
   * What this process learned about each role's model and how that changed what is sent,
   * for provenance (by model name: endpoints stay out of results). Empty when nothing did.
   */
  modelBehaviour(): Record<string, Record<string, unknown>> {
    const out: Record<string, Record<string, unknown>> = {};
    for (const role of ["executor", "vision", "judge"] as const) {
      const { profile, adaptation: a } = this.roles.resolve(role);
      if (!profile) continue;
      const notes: Record<string, unknown> = { ...out[profile.model] };
      if (!profile.temperature) notes.temperature = "none sent (the model takes only its default): rollout diversity comes from the model's own sampling";
      if (profile.reasoning && profile.reasoningEffort) notes[`reasoningEffort.${role}`] = profile.reasoningEffort;
      if (a?.structuredOutput) notes.structuredOutput = { mode: a.structuredOutput.mode, switchedBecause: a.structuredOutput.reasons };
      else if (profile.structuredOutput[0] !== this.cfg.structuredOutput) notes.structuredOutput = { mode: profile.structuredOutput[0] };
      if (profile.imagesPerRequest !== null) notes.imagesPerRequest = profile.imagesPerRequest;
      if (profile.imagesPerRequest === 0) notes.images = `the model takes no images: its calls (${role}) went without the case's images`;
      if (a?.tokenParameter) notes.tokenParameter = a.tokenParameter;
      if (Object.keys(notes).length) out[profile.model] = notes;
    }
    return out;
  }

  /**
   * The price each model of this case was costed at, with its source and date, or "unpriced"
   * (its calls' cost is unknown, never $0): for provenance. A provider that states each call's
   * cost (OpenRouter's usage.cost) is costed at that instead.
   */
  priceSources(models: readonly string[]): Record<string, Record<string, unknown> | string> {
    const out: Record<string, Record<string, unknown> | string> = {};
    for (const m of new Set(models)) {
      const p = priceOf(this.cfg.prices, m);
      out[m] = p ? { usdPerMillionInput: p.input, usdPerMillionOutput: p.output, ...(p.cachedInput !== undefined ? { usdPerMillionCachedInput: p.cachedInput } : {}), source: p.source ?? "unknown", ...(p.asOf ? { asOf: p.asOf } : {}) } : "unpriced: no price in MEDMMV_PRICES or the catalog (a provider's stated usage.cost is used where it gives one)";
    }
    return out;
  }

  /** Most images one request of this role's model (or `spec`, a rollout model) may carry, as its profile and server say now; 0: none; null: no known limit. */
  imagesPerRequest(role: Role, spec?: string): number | null {
    return this.roles.resolve(role, spec).imagesPerRequest;
  }

  modelFor(role: Role): string {
    return this.roles.name(role);
  }

  /** The model rollout `index` runs on (MEDMMV_ROLLOUT_MODELS round-robin, else the executor's). */
  rolloutModel(index: number): string {
    return this.roles.rolloutModel(index);
  }

  models(): Record<Role, string> {
    return { executor: this.modelFor("executor"), vision: this.modelFor("vision"), judge: this.modelFor("judge") };
  }

  /** The options this client was made with, for a sibling client on the same models (eval methods). */
  get clientOptions(): LlmClientOptions {
    return this.options;
  }

  /**
   * What one attempt sends: our own ChatOpenAI/Azure models get the structured-output call
   * options directly (rendered once, structured-output.ts); Anthropic's and Gemini's
   * integrations, and a chat model of the embedding program's, go through their own
   * `withStructuredOutput` (the provider's method, or the configured one).
   */
  private structuredRunnable(call: StructuredCall<z.ZodType>, route: ResolvedCall, method: StructuredMethod, maxOutputTokens: number | null): StructuredRunnable {
    const model = this.roles.get(route, call.temperature, maxOutputTokens);
    // A provider with an integration of its own asks for JSON its own way (providers/*.ts).
    const providerMethod = route.structuredMethod;
    if (!route.custom && providerMethod === null) {
      const options = this.formats.callOptions(call.schema, call.schemaName, method);
      return {
        invoke: async (messages, config) => ({ raw: (await model.invoke(messages, { ...config, ...options })) as AIMessage, parsed: undefined }),
      };
    }
    let bySchema = this.runnables.get(model);
    if (!bySchema) {
      bySchema = new WeakMap();
      this.runnables.set(model, bySchema);
    }
    let byName = bySchema.get(call.schema);
    if (!byName) {
      byName = new Map();
      bySchema.set(call.schema, byName);
    }
    let runnable = byName.get(call.schemaName);
    if (!runnable) {
      try {
        runnable = model.withStructuredOutput(call.schema, { name: call.schemaName, method: providerMethod ?? this.cfg.structuredOutput, includeRaw: true }) as unknown as StructuredRunnable;
      } catch {
        // A chat model without tool calling or this method: plain text it is. Every prompt
        // carries its JSON Schema, and the reply is validated below.
        runnable = model.pipe((raw: BaseMessage) => ({ raw, parsed: undefined })) as unknown as StructuredRunnable;
      }
      byName.set(call.schemaName, runnable);
    }
    return runnable;
  }

  /**
   * Whether the server ignores `method` for every request — its rule, not one case's content:
   * asked once per endpoint, model and mode (model-adaptation.ts keeps the answer for the
   * process) with the content-free probe of format-probe.ts. A probe that fails teaches nothing.
   */
  private ignoresMode(call: StructuredCall<z.ZodType>, route: ResolvedCall, endpoint: string, method: StructuredMethod, ctx: CallContext): Promise<boolean> {
    const model = route.spec;
    return confirmRule(`${endpoint}|${model}|${method}|prose`, async () => {
      const probe = { role: call.role, agent: "format-check", schema: FormatProbe, schemaName: "check", messages: FORMAT_PROBE_MESSAGES, temperature: 0, model: call.model };
      const runnable = this.structuredRunnable(probe, route, method, null);
      const started = Date.now();
      const tap: ReplyTap = { replied: false };
      const result = await withRetry(
        `format-check (${model})`,
        { maxAttempts: this.cfg.maxAttempts, baseDelayMs: this.cfg.backoffBaseMs, maxRetryAfterMs: this.cfg.maxRetryAfterMs, timeoutMs: this.cfg.timeoutMs },
        ctx.signal,
        // The SDK's own json_schema parse throws on a prose reply: the reply the tap saw answers the question all the same.
        ({ signal }) =>
          withReplyTap(tap, () => runnable.invoke(toLangChainMessages(FORMAT_PROBE_MESSAGES), { signal, runName: "medmmv.format-check", tags: ["medmmv"], callbacks: this.options.callbacks })).catch((err: unknown) => {
            if (tap.replied) return { raw: undefined };
            throw err;
          }),
        undefined,
        (run) => this.limiter.run(ctx.caseKey, ctx.signal, run),
      );
      ctx.meter.record({ kind: "llm", agent: "format-check", model, price: route.price, latencyMs: Date.now() - started, promptTokens: tap.promptTokens, completionTokens: tap.completionTokens, ...(tap.costUsd !== undefined ? { providerCostUsd: tap.costUsd } : {}) });
      return isProse(result.raw as AIMessage | undefined, tap);
    });
  }

  private cacheable(temperature: number): boolean {
    return this.cache !== null && (this.cfg.cache === "all" || (this.cfg.cache === "deterministic" && temperature === 0));
  }

  /** The owner is part of the key (`scope`): a tenant's cache hits must not reveal what another tenant sent. */
  cacheKey(call: StructuredCall<z.ZodType>, scope?: string): string {
    const h = createHash("sha256");
    h.update(JSON.stringify([call.model ?? this.modelFor(call.role), call.temperature, call.schemaName, this.cfg.structuredOutput, call.messages, scope ?? null]));
    return "llm:" + h.digest("hex");
  }

  async structured<S extends z.ZodType>(asked: StructuredCall<S>, ctx: CallContext): Promise<z.infer<S>> {
    // The role's image detail is part of what is sent (and so of the response-cache key).
    const call = { ...asked, messages: withImageDetail(asked.messages, this.cfg.imageDetail?.[asked.role] ?? "auto") };
    // The call's role and model, resolved once (call-route.ts): a lesson gives a new value, nothing is looked up again.
    let route = this.roles.resolve(call.role, call.model);
    const model = route.spec;
    const useCache = this.cacheable(call.temperature);
    const key = useCache ? this.cacheKey(call, ctx.cacheScope) : "";
    if (useCache) {
      // A cache that fails is a miss, except a replay's (eval --replay-cache): it fails the call rather than let it reach the model.
      const hit = await this.cache!.get(key).catch((e: unknown) => {
        if (e instanceof MedmmvError && e.details?.["replayMiss"] === true) throw e;
        return null;
      });
      const parsed = hit ? call.schema.safeParse(hit.parsed) : null;
      if (parsed?.success) {
        ctx.meter.record({ kind: "llm", agent: call.agent, model, price: route.price, latencyMs: 0, cacheHit: true });
        return parsed.data;
      }
    }
    let messages = call.messages;
    let lastProblem = "";
    /** The output budget after a reply was cut at its limit (null: none sent, the server's default). */
    let maxOutputTokens: number | null = null;
    let lengthReasked = false;
    let lessons = 0;
    const facts = () => ({ role: call.role, model, url: route.endpoint, ...route.failure, agent: call.agent });
    // The pioneer's hold on the calls behind it, per kind of first contact. Let go only once this
    // call has succeeded, or failed or been re-asked for a reason that is not a server's rule:
    // a lesson learned keeps them waiting, for the next attempt may reveal another rule (a
    // two-step fallback), which they must not break once each.
    const releases = new Map<"any" | "images", () => void>();
    const releaseWaiting = () => {
      for (const release of releases.values()) release();
      releases.clear();
    };
    try {
      for (let ask = 0; ask <= MAX_REASKS; ) {
        // The first call to a model (and the first with several images) goes alone; the others wait for what it reveals.
        // A model with any entry in MEDMMV_MODEL_PROFILES (even an empty one), and a catalog model on its own provider's
        // API, opt out of this wait: their calls go at once (and still learn from what their replies reveal).
        // What another call taught meanwhile (a pioneer's lesson) is obeyed: the same value while nothing was
        // (current: an identity check of what was learned, call-route.ts).
        route = current(route);
        const { endpoint } = route;
        const endpointUrl = route.profile === null || endpoint === null || this.cfg.profiles?.[model] || rulesKnownBeforeFirstReply(route.profile, endpoint) ? null : endpoint;
        if (endpointUrl !== null && !releases.has("any")) {
          const pioneer = await firstContact(endpointUrl, model, "any");
          if (pioneer) releases.set("any", pioneer);
          route = current(route);
        }
        let sent = await fitImages(messages, route.imagesPerRequest);
        if (endpointUrl !== null && imageCount(sent) > 1 && !releases.has("images")) {
          const pioneer = await firstContact(endpointUrl, model, "images");
          if (pioneer) releases.set("images", pioneer);
          const limit = route.imagesPerRequest;
          route = current(route);
          if (route.imagesPerRequest !== limit) sent = await fitImages(messages, route.imagesPerRequest);
        }
        const profile = route.profile;
        // A prompt the server would cut as it cut an earlier one is not sent (model-adaptation.ts learnTruncation).
        const keptBefore = route.adaptation?.keptPromptTokens;
        if (keptBefore !== undefined && textChars(sent) > MAX_CHARS_PER_TOKEN * keptBefore)
          throw modelFailure({ kind: "contextTruncated", promptTokens: keptBefore, expectedTokens: Math.ceil(textChars(sent) / CHARS_PER_TOKEN), promptChars: textChars(sent), notSent: true }, undefined, facts());
        const method = route.mode;
        await this.roles.ready(route);
        const runnable = this.structuredRunnable(call, route, method, maxOutputTokens);
        const started = Date.now();
        const lcMessages = toLangChainMessages(sent);
        let out: Attempt;
        try {
          out = await withRetry(
            `${call.agent} (${model})`,
            { maxAttempts: this.cfg.maxAttempts, baseDelayMs: this.cfg.backoffBaseMs, maxRetryAfterMs: this.cfg.maxRetryAfterMs, timeoutMs: this.cfg.timeoutMs },
            ctx.signal,
            async ({ signal, attempt }): Promise<Attempt> => {
              const tap: ReplyTap = { replied: false };
              try {
                const result = await withReplyTap(tap, () =>
                  runnable.invoke(lcMessages, {
                    signal,
                    runName: `medmmv.${call.agent}`,
                    metadata: { caseId: ctx.caseKey, agent: call.agent, role: call.role, model, attempt, ask, ...(route.endpoint ? { endpoint: route.endpoint } : {}) },
                    tags: ["medmmv", `medmmv.${call.agent}`],
                    callbacks: this.options.callbacks,
                  }),
                );
                return { raw: result.raw as AIMessage | undefined, parsed: result.parsed, tap, problem: null };
              } catch (err) {
                if (signal.aborted) throw err;
                // A refusal whose reason the server stated (a parameter, a mode, the image limit, its
                // content filter, the context window) is acted on, never retried as it stands.
                const rejection = rejectionOf(err, tap.rejected);
                if (rejection) return { raw: undefined, parsed: undefined, tap, problem: null, rejection, error: err };
                if (!isBadOutput(err, tap)) throw err;
                return { raw: undefined, parsed: undefined, tap, problem: describeBadOutput(err) };
              }
            },
            ({ error }) => {
              if (error.status === 429) this.limiter.noteRateLimited(error.retryAfterMs);
            },
            (run) => this.limiter.run(ctx.caseKey, ctx.signal, run),
          );
        } catch (err) {
          const d = (err as MedmmvError).details;
          if (d && (d.status === 429 || d.retryAfterMs !== undefined)) this.limiter.noteRateLimited();
          ctx.meter.record({ kind: "llm", agent: call.agent, model, price: route.price, latencyMs: Date.now() - started, failed: true, promptChars: promptChars(sent), imageBytes: imageBytes(sent) });
          ctx.chain.advance();
          if (!(err instanceof MedmmvError)) throw err;
          throw explainProviderFailure(err, facts());
        }
        if (out.rejection) {
          ctx.meter.record({ kind: "llm", agent: call.agent, model, price: route.price, latencyMs: Date.now() - started, failed: true, promptChars: promptChars(sent), imageBytes: imageBytes(sent) });
          ctx.chain.advance();
          const r = out.rejection;
          // What the server told us is learned for the model (once, for the whole process) and the call goes again.
          const lesson =
            !profile || endpoint === null || lessons >= MAX_LESSONS
              ? null
              : r.kind === "parameter" && (r.parameter === "temperature" || r.parameter === "top_p")
                ? ({ kind: "noTemperature" } as const)
                : r.kind === "parameter" && (r.parameter === "max_tokens" || r.parameter === "max_completion_tokens")
                  ? ({ kind: "tokenParameter", name: r.parameter === "max_tokens" ? "max_completion_tokens" : "max_tokens" } as const)
                  : r.kind === "structuredOutput"
                    ? ({ kind: "structuredOutput", failed: method, why: `the server refused ${r.parameter}` } as const)
                    : r.kind === "imageLimit"
                      ? ({ kind: "imageLimit", limit: r.limit } as const)
                      : null;
          if (lesson) {
            lessons++;
            // A new value to send by (another call may have learned the same lesson meanwhile: then too).
            const next = afterLesson(route, lesson);
            if (next) {
              route = next;
              continue;
            }
          }
          throw modelFailure(r, out.error, facts(), { promptChars: promptChars(sent), contextWindow: profile?.contextWindow ?? null });
        }
        const usage = out.raw?.usage_metadata;
        const reported = { prompt: usage?.input_tokens ?? out.tap.promptTokens, completion: usage?.output_tokens ?? out.tap.completionTokens };
        // A reply without usage is counted from its text, marked estimated (token-estimate.ts): never as free.
        const estimated = reported.prompt === undefined || reported.completion === undefined;
        const promptTokens = reported.prompt ?? (await estimateTokens(sent.map((m) => textOf(m.content)).join("\n")));
        const completionTokens = reported.completion ?? (await estimateTokens(replyText(out.raw, out.tap)));
        ctx.meter.record({
          kind: "llm",
          agent: call.agent,
          model,
          price: route.price,
          latencyMs: Date.now() - started,
          promptTokens,
          completionTokens,
          ...(estimated ? { estimated: true } : {}),
          ...(out.tap.costUsd !== undefined ? { providerCostUsd: out.tap.costUsd } : {}),
          // LangChain maps OpenAI's, Azure's and vLLM's usage.prompt_tokens_details.cached_tokens
          // (and other providers' cache reads) to input_token_details.cache_read.
          cachedPromptTokens: usage?.input_token_details?.cache_read ?? out.tap.cachedPromptTokens,
          promptChars: promptChars(sent),
          imageBytes: imageBytes(sent),
          // Not in LangChain's usage metadata: read from the raw reply where the provider states it.
          imageTokens: out.tap.imageTokens,
          reasoningTokens: usage?.output_token_details?.reasoning ?? out.tap.reasoningTokens,
        });
        ctx.chain.advance();
        // A server that cut the prompt to its window and answered anyway (Ollama): the reply is not about the whole case.
        const cut = reported.prompt === undefined ? null : truncatedPrompt(textChars(sent), reported.prompt, profile?.contextWindow ?? null);
        if (cut) {
          if (endpoint !== null) learnTruncation(endpoint, model, cut.promptTokens);
          throw modelFailure({ kind: "contextTruncated", ...cut }, undefined, facts());
        }
        const finish = out.tap.finishReason ?? finishReasonOf(out.raw?.response_metadata);
        // Azure filters a reply it has begun: 200, finish_reason content_filter, nothing usable. Not retried.
        if (finish === "content_filter") throw modelFailure({ kind: "contentFilter", categories: [], message: "" }, undefined, facts(), { contentFilterResults: out.tap.contentFilterResults });
        const refusal = out.tap.message?.refusal ?? out.raw?.additional_kwargs?.refusal;
        if (typeof refusal === "string" && refusal.trim()) throw modelFailure({ kind: "refused", message: refusal }, undefined, facts());
        // Claude's own refusal (stop_reason "refusal", through Anthropic's, Bedrock's or Vertex AI's integration): a refusal, not a bad reply to re-ask.
        if (finish === "refusal") throw modelFailure({ kind: "refused", message: "" }, undefined, facts());
        // Our own reading of the raw reply first: the library's `parsed` is already its zod output.
        const fromRaw = out.raw ? readReplyJson(out.raw) : readWireJson(out.tap.message);
        const candidate = fromRaw ?? (out.parsed === null ? undefined : out.parsed);
        const checked = candidate === undefined ? null : call.schema.safeParse(candidate);
        if (checked?.success) {
          if (useCache) await this.cache!.put(key, { parsed: checked.data as Record<string, unknown> }, ctx.caseKey).catch(() => undefined);
          return checked.data;
        }
        if (finish === "length") {
          // The budget ran out mid-reply: once more with a larger one, up to the model's limit (a provider's own
          // integration, built to no profile, takes the budget as it is: its limit is the catalog's where known).
          // Not for the embedding program's model, whose budget is its own.
          const limit = profile ? profile.outputLimit : (catalogEntry(route.spec)?.outputLimit ?? null);
          const used = out.tap.completionTokens ?? usage?.output_tokens ?? 0;
          const larger = Math.max(2 * (maxOutputTokens ?? used), 4096);
          const next = limit === null ? larger : Math.min(larger, limit);
          if (lengthReasked || route.custom || next <= (maxOutputTokens ?? used)) throw modelFailure({ kind: "truncated", message: "" }, undefined, facts(), { maxOutputTokens: maxOutputTokens ?? used, outputLimit: limit });
          lengthReasked = true;
          maxOutputTokens = next;
          releaseWaiting();
          ask++;
          continue;
        }
        if (candidate === undefined && profile && endpoint !== null && lessons < MAX_LESSONS && isProse(out.raw, out.tap)) {
          // Prose although a structured mode was asked for. It may be the server ignoring the mode,
          // or this case's content talking the model out of it (a prompt injection in the notes):
          // a lesson for every case and tenant of the process comes only from the server's rule,
          // confirmed by a request that carries none of this case (ignoresMode).
          lessons++;
          if (await this.ignoresMode(call, route, endpoint, method, ctx)) {
            const next = afterLesson(route, { kind: "structuredOutput", failed: method, why: "the server ignored it and answered in prose" });
            if (next) {
              route = next;
              continue;
            }
          }
        }
        lastProblem = checked ? formatZodIssues(checked.error) : (out.problem ?? "the reply was not valid JSON");
        // An unusable reply is no rule of the server's: the calls behind this one may go.
        releaseWaiting();
        // Re-ask with the validation error; the bad reply is quoted back only as data.
        messages = [
          ...call.messages,
          {
            role: "user",
            content: `Your previous reply could not be used: ${lastProblem}. Reply again with ONLY a JSON object that matches the required schema "${call.schemaName}" exactly.`,
          },
        ];
        ask++;
      }
    } finally {
      releaseWaiting();
    }
    throw new MedmmvError("LLM_BAD_OUTPUT", `${call.agent}: the model's structured output was still invalid after ${MAX_REASKS} re-asks (${lastProblem})`, { retryable: false });
  }
}

/** At most 8 problems: enough for the model to fix its reply, short enough to re-ask with. */
function formatZodIssues(err: z.ZodError): string {
  return describeZodIssues(err, 8).message;
}

/**
 * Callback handlers as instances, made once. LangChain wraps a bare object of methods in a
 * new handler class (with a new uuid) on every model call it is given to: 2.8 % of the
 * service's CPU under 64 concurrent cases when the server's failure log was such an object.
 */
function asHandlers(callbacks: Callbacks | undefined): Callbacks | undefined {
  if (!Array.isArray(callbacks)) return callbacks;
  return callbacks.map((c) => (c instanceof BaseCallbackHandler ? c : BaseCallbackHandler.fromMethods(c as CallbackHandlerMethods)));
}
