import { describeZodIssues } from "../contracts/zod-issues.js";
import { createHash } from "node:crypto";
import type { Callbacks } from "@langchain/core/callbacks/manager";
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { AIMessage, BaseMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import type { z } from "zod";
import type { Config } from "../config.js";
import { MedmmvError } from "../contracts/errors.js";
import type { FairLimiter } from "./limiter.js";
import { withRetry } from "./retry.js";
import { RoleModels, providerVariables, type ChatModelSource, type Role } from "./chat-models.js";
import { withReplyTap, type ReplyTap } from "./model-fetch.js";
import { StructuredOutputFormats } from "./structured-output.js";
import { explainProviderFailure } from "./provider-errors.js";
import { readReplyJson, readWireJson } from "./reply-json.js";
import { imageBytes, promptChars, toLangChainMessages, withImageDetail, type ChatMessage } from "./messages.js";
import type { CallChain, UsageMeter } from "./usage.js";

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
  put(key: string, value: Record<string, unknown>): Promise<void>;
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

/** What one attempt gave: a reply (valid or not is decided after), or an unusable one. */
type Attempt = { raw: AIMessage | undefined; parsed: unknown; tap: ReplyTap; problem: null } | { raw: undefined; parsed: undefined; tap: ReplyTap; problem: string };

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
 * Role-based access to LangChain chat models (ChatOpenAI / AzureChatOpenAI, or the
 * embedding program's own). The wire is the chat model's; what stays ours: one retry layer,
 * a process-wide fair limiter, structured output validated with zod and re-asked at most
 * twice, usage per agent, a content-addressed response cache for deterministic calls, and
 * run names and metadata for tracing.
 */
export class LlmClient {
  private readonly roles: RoleModels;
  /** The call options asking our own models for each schema, rendered once (schema conversion is not free). */
  private readonly formats: StructuredOutputFormats;
  /** The embedding program's models: structured-output runnables per model, schema and name, built once. */
  private readonly runnables = new WeakMap<BaseChatModel, WeakMap<z.ZodType, Map<string, StructuredRunnable>>>();

  constructor(
    private readonly cfg: Config["llm"],
    private readonly limiter: FairLimiter,
    private readonly cache: ResponseCache | null = null,
    private readonly options: LlmClientOptions = {},
  ) {
    this.roles = new RoleModels(cfg, options.chatModels);
    this.formats = new StructuredOutputFormats(cfg.structuredOutput);
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
   * options directly (rendered once, structured-output.ts); a chat model of the embedding
   * program's goes through its own `withStructuredOutput`, whatever provider it speaks.
   */
  private structuredRunnable(call: StructuredCall<z.ZodType>): StructuredRunnable {
    const model = this.roles.get(call.role, call.temperature, call.model);
    // Anthropic's and Gemini's integrations ask for JSON their own way (chat-models.ts).
    const providerMethod = this.roles.structuredMethod(call.role, call.model);
    if (!this.roles.isCustom(call.role, call.model) && providerMethod === null) {
      const options = this.formats.callOptions(call.schema, call.schemaName);
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
    const model = call.model ?? this.modelFor(call.role);
    const useCache = this.cacheable(call.temperature);
    const key = useCache ? this.cacheKey(call, ctx.cacheScope) : "";
    if (useCache) {
      const hit = await this.cache!.get(key).catch(() => null);
      const parsed = hit ? call.schema.safeParse(hit.parsed) : null;
      if (parsed?.success) {
        ctx.meter.record({ kind: "llm", agent: call.agent, model, latencyMs: 0, cacheHit: true });
        return parsed.data;
      }
    }
    const runnable = this.structuredRunnable(call);
    let messages = call.messages;
    let lastProblem = "";
    for (let ask = 0; ask <= MAX_REASKS; ask++) {
      const started = Date.now();
      const lcMessages = toLangChainMessages(messages);
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
                  metadata: { caseId: ctx.caseKey, agent: call.agent, role: call.role, model, attempt, ask },
                  tags: ["medmmv", `medmmv.${call.agent}`],
                  callbacks: this.options.callbacks,
                }),
              );
              return { raw: result.raw as AIMessage | undefined, parsed: result.parsed, tap, problem: null };
            } catch (err) {
              if (signal.aborted || !isBadOutput(err, tap)) throw err;
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
        ctx.meter.record({ kind: "llm", agent: call.agent, model, latencyMs: Date.now() - started, failed: true, promptChars: promptChars(messages), imageBytes: imageBytes(messages) });
        ctx.chain.advance();
        if (!(err instanceof MedmmvError)) throw err;
        throw explainProviderFailure(err, { role: call.role, model, url: this.roles.endpoint(call.role, call.model), ...providerVariables(this.roles, call.role, call.model) });
      }
      const usage = out.raw?.usage_metadata;
      ctx.meter.record({
        kind: "llm",
        agent: call.agent,
        model,
        latencyMs: Date.now() - started,
        promptTokens: usage?.input_tokens ?? out.tap.promptTokens,
        completionTokens: usage?.output_tokens ?? out.tap.completionTokens,
        // LangChain maps OpenAI's, Azure's and vLLM's usage.prompt_tokens_details.cached_tokens
        // (and other providers' cache reads) to input_token_details.cache_read.
        cachedPromptTokens: usage?.input_token_details?.cache_read ?? out.tap.cachedPromptTokens,
        promptChars: promptChars(messages),
        imageBytes: imageBytes(messages),
        // Not in LangChain's usage metadata: read from the raw reply where the provider states it.
        imageTokens: out.tap.imageTokens,
      });
      ctx.chain.advance();
      // Our own reading of the raw reply first: the library's `parsed` is already its zod output.
      const fromRaw = out.raw ? readReplyJson(out.raw) : readWireJson(out.tap.message);
      const candidate = fromRaw ?? (out.parsed === null ? undefined : out.parsed);
      const checked = candidate === undefined ? null : call.schema.safeParse(candidate);
      if (checked?.success) {
        if (useCache) await this.cache!.put(key, { parsed: checked.data as Record<string, unknown> }).catch(() => undefined);
        return checked.data;
      }
      lastProblem = checked ? formatZodIssues(checked.error) : (out.problem ?? "the reply was not valid JSON");
      // Re-ask with the validation error; the bad reply is quoted back only as data.
      messages = [
        ...call.messages,
        {
          role: "user",
          content: `Your previous reply could not be used: ${lastProblem}. Reply again with ONLY a JSON object that matches the required schema "${call.schemaName}" exactly.`,
        },
      ];
    }
    throw new MedmmvError("LLM_BAD_OUTPUT", `${call.agent}: the model's structured output was still invalid after ${MAX_REASKS} re-asks (${lastProblem})`, { retryable: false });
  }
}

/** At most 8 problems: enough for the model to fix its reply, short enough to re-ask with. */
function formatZodIssues(err: z.ZodError): string {
  return describeZodIssues(err, 8).message;
}
