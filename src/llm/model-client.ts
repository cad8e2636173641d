import { createHash } from "node:crypto";
import { toJsonSchema } from "@langchain/core/utils/json_schema";
import type { z } from "zod";
import type { Config } from "../config.js";
import { MedmmvError } from "../errors.js";
import type { FairLimiter } from "./limiter.js";
import { withRetry } from "./retry.js";
import { ChatCompletionsEndpoint, type ChatCompletionReply } from "./openai-chat.js";
import { promptChars, type ChatMessage } from "./messages.js";
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

/**
 * Role-based access to an OpenAI-compatible endpoint. One retry layer (ours), a
 * process-wide fair limiter, structured output validated with zod and re-asked at most
 * twice, usage per agent, and a content-addressed response cache for deterministic calls.
 */
export class LlmClient {
  private readonly endpoint: ChatCompletionsEndpoint;
  /** Request options per schema object and schema name (see requestFormat). */
  private readonly formats = new WeakMap<z.ZodType, Map<string, Record<string, unknown>>>();

  constructor(
    private readonly cfg: Config["llm"],
    private readonly limiter: FairLimiter,
    private readonly cache: ResponseCache | null = null,
  ) {
    this.endpoint = new ChatCompletionsEndpoint(cfg.baseUrl, cfg.apiKey);
  }

  modelFor(role: Role): string {
    const m = this.cfg.models[role];
    if (!m) throw new MedmmvError("CONFIG_MISSING", "no model configured: set MEDMMV_MODEL");
    return m;
  }

  models(): Record<Role, string> {
    return { executor: this.modelFor("executor"), vision: this.modelFor("vision"), judge: this.modelFor("judge") };
  }

  /**
   * The structured-output part of the request (response_format, or a forced tool call),
   * built once per schema and reused: the same fields LangChain's `withStructuredOutput`
   * sends, without converting the zod schema to JSON Schema again on every call (that
   * conversion alone cost several ms of CPU per call, `npm run bench`). The reply is
   * validated with zod in structured(), whatever the method.
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
    const format = this.requestFormat(call);
    let messages = call.messages;
    let lastProblem = "";
    for (let ask = 0; ask <= MAX_REASKS; ask++) {
      const started = Date.now();
      let out: ChatCompletionReply;
      try {
        out = await withRetry(
          `${call.agent} (${model})`,
          { maxAttempts: this.cfg.maxAttempts, baseDelayMs: this.cfg.backoffBaseMs, maxRetryAfterMs: this.cfg.maxRetryAfterMs, timeoutMs: this.cfg.timeoutMs },
          ctx.signal,
          ({ signal }) => this.endpoint.complete({ model, temperature: call.temperature, messages, format }, signal),
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
      ctx.meter.record({ kind: "llm", agent: call.agent, model, latencyMs: Date.now() - started, promptTokens: out.promptTokens, completionTokens: out.completionTokens, promptChars: promptChars(messages) });
      ctx.chain.advance();
      const candidate = out.json;
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

export function formatZodIssues(err: z.ZodError): string {
  return err.issues
    .slice(0, 8)
    .map((i) => `${i.path.length ? i.path.join(".") : "(root)"}: ${i.message}`)
    .join("; ");
}
