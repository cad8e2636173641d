import { createHash } from "node:crypto";
import { ChatOpenAI } from "@langchain/openai";
import type { BaseMessage } from "@langchain/core/messages";
import type { z } from "zod";
import type { Config } from "../config.js";
import { MedmmvError } from "../errors.js";
import type { FairLimiter } from "./limiter.js";
import { withRetry } from "./retry.js";
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

type Invokable = { invoke(messages: BaseMessage[], options: { signal: AbortSignal }): Promise<unknown> };
type RawStructured = { raw: BaseMessage & { usage_metadata?: { input_tokens?: number; output_tokens?: number }; tool_calls?: Array<{ args: unknown }>; invalid_tool_calls?: Array<{ args?: string }> }; parsed: unknown; parsingError?: unknown };

/**
 * Role-based access to an OpenAI-compatible endpoint. One retry layer (ours), a
 * process-wide fair limiter, structured output validated with zod and re-asked at most
 * twice, usage per agent, and a content-addressed response cache for deterministic calls.
 */
export class LlmClient {
  private readonly runnables = new Map<string, Invokable>();

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
      configuration: { baseURL: this.cfg.baseUrl ?? undefined, maxRetries: 0 },
    });
  }

  private structuredRunnable(call: StructuredCall<z.ZodType>): Invokable {
    const key = `${call.role}|${call.temperature}|${call.schemaName}`;
    let r = this.runnables.get(key);
    if (!r) {
      r = this.chat(call.role, call.temperature).withStructuredOutput(call.schema as z.ZodType<Record<string, unknown>>, {
        name: call.schemaName,
        method: this.cfg.structuredOutput,
        includeRaw: true,
      }) as unknown as Invokable;
      this.runnables.set(key, r);
    }
    return r;
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
    const runnable = this.structuredRunnable(call);
    let messages = call.messages;
    let lastProblem = "";
    for (let ask = 0; ask <= MAX_REASKS; ask++) {
      const started = Date.now();
      let out: RawStructured;
      try {
        out = await withRetry(
          `${call.agent} (${model})`,
          { maxAttempts: this.cfg.maxAttempts, baseDelayMs: this.cfg.backoffBaseMs, maxRetryAfterMs: this.cfg.maxRetryAfterMs, timeoutMs: this.cfg.timeoutMs },
          ctx.signal,
          ({ signal }) => invokeTolerant(runnable, toLangChain(messages), signal),
          undefined,
          (run) => this.limiter.run(ctx.caseKey, ctx.signal, run),
        );
      } catch (err) {
        ctx.meter.record({ kind: "llm", agent: call.agent, model, latencyMs: Date.now() - started, failed: true, promptChars: promptChars(messages) });
        ctx.chain.advance();
        throw err;
      }
      const usage = out.raw?.usage_metadata;
      ctx.meter.record({ kind: "llm", agent: call.agent, model, latencyMs: Date.now() - started, promptTokens: usage?.input_tokens, completionTokens: usage?.output_tokens, promptChars: promptChars(messages) });
      ctx.chain.advance();
      const candidate = out.parsed ?? salvageJson(out.raw);
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
 * ZodError, LengthFinishReasonError). That is a content problem to re-ask about, not a
 * transport failure to retry, so it comes back as an unparsed reply.
 */
const BAD_OUTPUT_ERRORS = new Set(["SyntaxError", "ZodError", "$ZodError", "LengthFinishReasonError", "ContentFilterFinishReasonError", "OutputParserException"]);
async function invokeTolerant(runnable: Invokable, messages: BaseMessage[], signal: AbortSignal): Promise<RawStructured> {
  try {
    return (await runnable.invoke(messages, { signal })) as RawStructured;
  } catch (err) {
    const name = (err as Error)?.name ?? "";
    const ctor = (err as object)?.constructor?.name ?? "";
    if (BAD_OUTPUT_ERRORS.has(name) || BAD_OUTPUT_ERRORS.has(ctor) || (err as { lc_error_code?: string })?.lc_error_code === "OUTPUT_PARSING_FAILURE")
      return { raw: undefined as unknown as RawStructured["raw"], parsed: undefined, parsingError: err };
    throw err;
  }
}

/** When the SDK's parser gave up, try the raw text or tool arguments once more (e.g. fenced JSON). */
function salvageJson(raw: RawStructured["raw"] | undefined): unknown {
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
