import { createHash } from "node:crypto";
import { ChatOpenAI } from "@langchain/openai";
import { toJsonSchema } from "@langchain/core/utils/json_schema";
import type { BaseMessage } from "@langchain/core/messages";
import type { z } from "zod";
import type { Config } from "../config.js";
import { MedmmvError } from "../errors.js";
import type { FairLimiter } from "./limiter.js";
import { withRetry } from "./retry.js";
import { httpFetch } from "./http-fetch.js";
import { toLangChain, promptChars, type ChatMessage } from "./messages.js";
import type { CallChain, UsageMeter } from "./usage.js";

export type Role = "executor" | "vision" | "judge";

/** Where a call's costs go and which case it belongs to (for fair scheduling). */
export interface CallContext {
  caseKey: string;
  meter: UsageMeter;
  chain: CallChain;
  signal?: AbortSignal;
}

export interface StructuredCall<S extends z.ZodType> {
  role: Role;
  agent: string;
  schema: S;
  /** Schema name sent to the provider (function name / json_schema name). */
  schemaName: string;
  messages: ChatMessage[];
  temperature: number;
}

export interface ResponseCache {
  get(key: string): Promise<Record<string, unknown> | null>;
  put(key: string, value: Record<string, unknown>): Promise<void>;
}

/** At most this many re-asks after an invalid reply (DESIGN §5). */
export const MAX_REASKS = 2;

type Invokable = { invoke(messages: BaseMessage[], options: Record<string, unknown> & { signal: AbortSignal }): Promise<unknown> };
type RawMessage = BaseMessage & { usage_metadata?: { input_tokens?: number; output_tokens?: number }; tool_calls?: Array<{ args: unknown }>; invalid_tool_calls?: Array<{ args?: string }> };

/**
 * Role-based access to an OpenAI-compatible endpoint. One retry layer (ours), a
 * process-wide fair limiter, structured output validated with zod and re-asked at most
 * twice, usage per agent, and a content-addressed response cache for deterministic calls.
 */
export class LlmClient {
  private readonly models_ = new Map<string, Invokable>();
  /** Request options per schema object and schema name (see requestFormat). */
  private readonly formats = new WeakMap<z.ZodType, Map<string, Record<string, unknown>>>();

  constructor(
    private readonly cfg: Config["llm"],
    private readonly limiter: FairLimiter,
    private readonly cache: ResponseCache | null = null,
  ) {}

  modelFor(role: Role): string {
    const m = this.cfg.models[role];
    if (!m) throw new MedmmvError("CONFIG_MISSING", "no model configured: set MEDMMV_MODEL");
    return m;
  }

  models(): Record<Role, string> {
    return { executor: this.modelFor("executor"), vision: this.modelFor("vision"), judge: this.modelFor("judge") };
  }

  private chat(role: Role, temperature: number): ChatOpenAI {
    return new ChatOpenAI({
      model: this.modelFor(role),
      temperature,
      apiKey: this.cfg.apiKey ?? "not-needed",
      // Our retry layer is the only one (DESIGN §5, §8): the SDK and LangChain's caller must not retry.
      maxRetries: 0,
      streaming: false,
      // node:http instead of the built-in fetch: half the CPU per call (see http-fetch.ts).
      configuration: { baseURL: this.cfg.baseUrl ?? undefined, maxRetries: 0, fetch: httpFetch },
    });
  }

  private model(role: Role, temperature: number): Invokable {
    const key = `${role}|${temperature}`;
    let m = this.models_.get(key);
    if (!m) {
      m = this.chat(role, temperature) as unknown as Invokable;
      this.models_.set(key, m);
    }
    return m;
  }

  /**
   * The structured-output part of the request (response_format, or a forced tool call),
   * built once per schema and reused. It is the request `withStructuredOutput(zod)` sends,
   * field for field, but that path converts the zod schema to JSON Schema again on every
   * call and runs LangChain's parser chain around it: measured by `npm run bench`
   * (orchestration overhead), ≈ 9 ms of CPU per call through withStructuredOutput against
   * ≈ 3 ms through a plain invoke with these options. The reply is validated with zod
   * below either way, so nothing is lost by parsing it ourselves.
   */
  private requestFormat(call: StructuredCall<z.ZodType>): Record<string, unknown> {
    let bySchema = this.formats.get(call.schema);
    if (!bySchema) {
      bySchema = new Map();
      this.formats.set(call.schema, bySchema);
    }
    const key = `${this.cfg.structuredOutput}|${call.schemaName}`;
    let format = bySchema.get(key);
    if (format) return format;
    const name = call.schemaName;
    if (this.cfg.structuredOutput === "jsonMode") {
      format = { response_format: { type: "json_object" } };
    } else if (this.cfg.structuredOutput === "jsonSchema") {
      const schema = toJsonSchema(call.schema, {
        cycles: "ref",
        reused: "ref",
        override(ctx) {
          ctx.jsonSchema.title = name;
        },
      }) as Record<string, unknown>;
      const description = typeof schema.description === "string" ? schema.description : undefined;
      format = { response_format: { type: "json_schema", json_schema: { ...(description ? { description } : {}), name, strict: true, schema } } };
    } else {
      const parameters = toJsonSchema(call.schema) as Record<string, unknown>;
      format = {
        tools: [{ type: "function", function: { name, description: parameters.description, parameters } }],
        tool_choice: { type: "function", function: { name } },
      };
    }
    bySchema.set(key, format);
    return format;
  }

  private cacheable(temperature: number): boolean {
    return this.cache !== null && (this.cfg.cache === "all" || (this.cfg.cache === "deterministic" && temperature === 0));
  }

  cacheKey(call: StructuredCall<z.ZodType>): string {
    const h = createHash("sha256");
    h.update(JSON.stringify([this.modelFor(call.role), call.temperature, call.schemaName, this.cfg.structuredOutput, call.messages]));
    return "llm:" + h.digest("hex");
  }

  async structured<S extends z.ZodType>(call: StructuredCall<S>, ctx: CallContext): Promise<z.infer<S>> {
    const model = this.modelFor(call.role);
    const useCache = this.cacheable(call.temperature);
    const key = useCache ? this.cacheKey(call) : "";
    if (useCache) {
      const hit = await this.cache!.get(key).catch(() => null);
      const parsed = hit ? call.schema.safeParse(hit.parsed) : null;
      if (parsed?.success) {
        ctx.meter.record({ kind: "llm", agent: call.agent, model, latencyMs: 0, cacheHit: true });
        return parsed.data;
      }
    }
    const runnable = this.model(call.role, call.temperature);
    const format = this.requestFormat(call);
    let messages = call.messages;
    let lastProblem = "";
    for (let ask = 0; ask <= MAX_REASKS; ask++) {
      const started = Date.now();
      let out: RawMessage | undefined;
      try {
        out = await withRetry(
          `${call.agent} (${model})`,
          { maxAttempts: this.cfg.maxAttempts, baseDelayMs: this.cfg.backoffBaseMs, maxRetryAfterMs: this.cfg.maxRetryAfterMs, timeoutMs: this.cfg.timeoutMs },
          ctx.signal,
          ({ signal }) => invokeTolerant(runnable, toLangChain(messages), format, signal),
          ({ error }) => {
            if (error.status === 429) this.limiter.noteRateLimited();
          },
          (run) => this.limiter.run(ctx.caseKey, ctx.signal, run),
        );
      } catch (err) {
        const d = (err as MedmmvError).details;
        if (d && (d.status === 429 || d.retryAfterMs !== undefined)) this.limiter.noteRateLimited();
        ctx.meter.record({ kind: "llm", agent: call.agent, model, latencyMs: Date.now() - started, failed: true, promptChars: promptChars(messages) });
        ctx.chain.advance();
        throw err;
      }
      const usage = out?.usage_metadata;
      ctx.meter.record({ kind: "llm", agent: call.agent, model, latencyMs: Date.now() - started, promptTokens: usage?.input_tokens, completionTokens: usage?.output_tokens, promptChars: promptChars(messages) });
      ctx.chain.advance();
      const candidate = readJson(out);
      const checked = candidate === undefined ? null : call.schema.safeParse(candidate);
      if (checked?.success) {
        if (useCache) await this.cache!.put(key, { parsed: checked.data as Record<string, unknown> }).catch(() => undefined);
        return checked.data;
      }
      lastProblem = checked ? formatZodIssues(checked.error) : "the reply was not valid JSON";
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

/**
 * With json_schema the SDK parses inside the call and throws on bad output (SyntaxError,
 * LengthFinishReasonError, …). That is a content problem to re-ask about, not a transport
 * failure to retry, so it comes back as "no usable reply" (undefined).
 */
const BAD_OUTPUT_ERRORS = new Set(["SyntaxError", "ZodError", "$ZodError", "LengthFinishReasonError", "ContentFilterFinishReasonError", "OutputParserException"]);
async function invokeTolerant(runnable: Invokable, messages: BaseMessage[], format: Record<string, unknown>, signal: AbortSignal): Promise<RawMessage | undefined> {
  try {
    return (await runnable.invoke(messages, { ...format, signal })) as RawMessage;
  } catch (err) {
    const name = (err as Error)?.name ?? "";
    const ctor = (err as object)?.constructor?.name ?? "";
    if (BAD_OUTPUT_ERRORS.has(name) || BAD_OUTPUT_ERRORS.has(ctor) || (err as { lc_error_code?: string })?.lc_error_code === "OUTPUT_PARSING_FAILURE")
      return undefined;
    throw err;
  }
}

/** The reply's JSON: the forced tool call's arguments, or the content (tolerating fences and prose around it). */
function readJson(raw: RawMessage | undefined): unknown {
  if (!raw) return undefined;
  if (raw.tool_calls?.length) return raw.tool_calls[0]!.args;
  const text = typeof raw.content === "string" ? raw.content : "";
  const fenced = /```(?:json)?\s*([\s\S]*?)```/.exec(text);
  const body = (fenced ? fenced[1]! : text).trim();
  const start = body.indexOf("{");
  const end = body.lastIndexOf("}");
  if (start < 0 || end <= start) return undefined;
  try {
    return JSON.parse(body.slice(start, end + 1));
  } catch {
    return undefined;
  }
}

export function formatZodIssues(err: z.ZodError): string {
  return err.issues
    .slice(0, 8)
    .map((i) => `${i.path.length ? i.path.join(".") : "(root)"}: ${i.message}`)
    .join("; ");
}
