import { AsyncLocalStorage } from "node:async_hooks";
import { Readable } from "node:stream";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import { readCappedStream } from "../net/read-capped-body.js";
import { asFetchError, send, sendable, type WireExchange } from "./model-transport.js";
import { statedWaitMs } from "./rate-limit-hints.js";

/**
 * The fetch under the OpenAI SDK (ChatOpenAI's `configuration.fetch`). The SDK builds the
 * request; this looks at the reply before the SDK does, for what the SDK takes at face
 * value: a 2xx body that is an error object, not JSON, or unboundedly large. Model replies
 * are untrusted input.
 *
 * The reply is parsed once, here: the SDK is handed a Response whose `json()` returns the
 * object already parsed, so what we read from the wire (usage details LangChain drops,
 * finish_reason, a refusal, an error body) costs no second JSON.parse. The request itself goes
 * out through model-transport.ts, not fetch (the CPU of fetch's own layer, per call).
 */

/** A reply larger than this is refused. */
export const MAX_REPLY_BYTES = 32 * 1024 * 1024;
/** An error body larger than this is not read for its reason (a provider's error is a few hundred bytes). */
const MAX_ERROR_BYTES = 256 * 1024;

/**
 * What one attempt's HTTP exchange showed, for the client that made it. The SDK can throw
 * after a reply arrived (its json_schema parse, a length finish): then this is how the
 * client knows the model answered (re-ask, don't retry) and what the answer cost.
 */
export interface ReplyTap {
  replied: boolean;
  promptTokens?: number;
  completionTokens?: number;
  /** usage.prompt_tokens_details.cached_tokens (OpenAI, Azure, vLLM), or DeepSeek-style prompt_cache_hit_tokens. */
  cachedPromptTokens?: number;
  /** usage.prompt_tokens_details.image_tokens, where the provider states it (part of promptTokens). */
  imageTokens?: number;
  /** usage.completion_tokens_details.reasoning_tokens (part of completionTokens, billed as output). */
  reasoningTokens?: number;
  /** The first choice's finish_reason ("stop", "length", "content_filter", "tool_calls"). */
  finishReason?: string;
  /** The first choice's message as sent, for reading the JSON the SDK refused. */
  message?: WireMessage;
  /** Azure's per-category verdicts on the completion (choices[0].content_filter_results). */
  contentFilterResults?: unknown;
  /** The cost the provider states for the call in USD (OpenRouter's usage.cost): it wins over a price table. */
  costUsd?: number;
  /** A non-2xx reply (or a 2xx whose body is an error): its status and its body, parsed when it was JSON, else its text. */
  rejected?: { status: number; body: unknown };
}

export interface WireMessage {
  content?: unknown;
  refusal?: unknown;
  tool_calls?: Array<{ function?: { arguments?: unknown } }>;
}

const taps = new AsyncLocalStorage<ReplyTap>();

/** Runs one model attempt with `tap` collecting what its HTTP reply showed. */
export function withReplyTap<T>(tap: ReplyTap, run: () => Promise<T>): Promise<T> {
  return taps.run(tap, run);
}

/**
 * A Response whose body was already read and parsed: the SDK's `json()` gets the object
 * (no second parse), `text()` the original text (the SDK reads error bodies as text).
 */
class ParsedResponse extends Response {
  constructor(
    private readonly parsed: unknown,
    private readonly raw: string,
    init: ResponseInit,
  ) {
    super(null, init);
  }
  override json(): Promise<unknown> {
    return Promise.resolve(this.parsed);
  }
  override text(): Promise<string> {
    return Promise.resolve(this.raw);
  }
}

/** The reply's headers as the SDK should see them: the body it gets is decoded and whole. */
function headersOf(from: WireExchange, json: boolean): Headers {
  const headers = new Headers(from.headers);
  headers.delete("content-length");
  headers.delete("content-encoding");
  if (json) headers.set("content-type", "application/json");
  return headers;
}

/** A reply the SDK will read as an HTTP error with this status (and so our retry layer too). */
function providerFault(from: WireExchange, status: number, message: string): Response {
  const body = { error: { message, type: "provider_fault", code: null } };
  return new ParsedResponse(body, JSON.stringify(body), { status, headers: headersOf(from, true) });
}

interface WireReply {
  error?: { message?: unknown; code?: unknown } | string;
  choices?: Array<{ message?: WireMessage; finish_reason?: unknown; content_filter_results?: unknown }>;
  usage?: {
    prompt_tokens?: unknown;
    completion_tokens?: unknown;
    prompt_tokens_details?: { cached_tokens?: unknown; image_tokens?: unknown } | null;
    completion_tokens_details?: { reasoning_tokens?: unknown } | null;
    prompt_cache_hit_tokens?: unknown;
    cost?: unknown;
  };
}

/**
 * The fetch for one chat model. `withoutAuthorization`: the endpoint has no key (a local
 * vLLM or Ollama); the SDK insists on one, so it is given a placeholder that is dropped here
 * and never sent (a proxy may refuse a bearer token it does not know).
 */
export function guardedFetch(opts: { withoutAuthorization?: boolean } = {}): typeof fetch {
  const dropAuthorization = opts.withoutAuthorization === true;
  return async (input, init) => {
    const signal = init?.signal;
    const exchange = sendable(input, init) ? await send(input as string | URL, init, { dropAuthorization }) : await viaFetch(input, init, dropAuthorization);
    try {
      return await guardReply(exchange);
    } catch (err) {
      // The connection failed or was aborted mid-reply: what fetch's body reader rejects with.
      exchange.body.destroy();
      throw asFetchError(err, signal, "terminated");
    }
  };
}

/** A request the transport does not carry (a Request object, a stream body): fetch sends it. */
async function viaFetch(input: Parameters<typeof fetch>[0], init: RequestInit | undefined, dropAuthorization: boolean): Promise<WireExchange> {
  let sent = init;
  if (dropAuthorization && init) {
    const headers = new Headers(init.headers);
    headers.delete("authorization");
    sent = { ...init, headers };
  }
  const res = await fetch(input, sent);
  const body = res.body ? Readable.fromWeb(res.body as NodeReadableStream<Uint8Array>) : Readable.from([]);
  return { status: res.status, statusText: res.statusText, headers: res.headers, body };
}

function count(v: unknown): number | undefined {
  return typeof v === "number" && Number.isFinite(v) && v >= 0 ? Math.round(v) : undefined;
}

/** A refused request: its body is read (bounded) for the reason the provider states, then handed on as the SDK expects. */
async function readRejection(res: WireExchange): Promise<Response> {
  const tap = taps.getStore();
  const bytes = await readCappedStream(res.body, res.headers.get("content-length"), MAX_ERROR_BYTES);
  const text = bytes === null ? "" : bytes.toString("utf8");
  let body: unknown = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    // Plain text (TGI's 422 from its JSON extractor names the field it refused): read as words.
    body = text.trim() ? text : null;
  }
  if (tap) tap.rejected = { status: res.status, body };
  const headers = headersOf(res, false);
  // The wait a 429 states other than in Retry-After (x-ratelimit-reset-*, Gemini's retryDelay),
  // as retry-after-ms, which the retry layer reads (retry.ts).
  if (!headers.has("retry-after") && !headers.has("retry-after-ms")) {
    const waitMs = statedWaitMs(res.status, res.headers, body);
    if (waitMs !== null) headers.set("retry-after-ms", String(waitMs));
  }
  return new ParsedResponse(body, text, { status: res.status, statusText: res.statusText, headers });
}

/** Statuses whose reply has no body to read (a Response refuses one). */
const NO_BODY = new Set([204, 205, 304]);

async function guardReply(res: WireExchange): Promise<Response> {
  if (res.status < 200 || res.status > 299) return readRejection(res);
  if (NO_BODY.has(res.status)) {
    res.body.resume();
    return new Response(null, { status: res.status, statusText: res.statusText, headers: headersOf(res, false) });
  }
  const bytes = await readCappedStream(res.body, res.headers.get("content-length"), MAX_REPLY_BYTES);
  if (bytes === null) return providerFault(res, 502, `the model's reply is larger than ${MAX_REPLY_BYTES} bytes`);
  const text = bytes.toString("utf8");
  let reply: WireReply | null = null;
  try {
    reply = JSON.parse(text) as WireReply;
  } catch {
    // A proxy's HTML page or a cut-off body: a transient fault of the provider, retried like a 502.
    return providerFault(res, 502, `HTTP ${res.status} reply is not JSON (${res.headers.get("content-type") ?? "no content-type"}, ${bytes.length} bytes)`);
  }
  // Some gateways answer 200 with an error object and no choices: a provider fault with the
  // gateway's own status when it gives one, not a reply to re-ask about.
  if (reply && typeof reply === "object" && !Array.isArray(reply.choices) && reply.error !== undefined) {
    const e = reply.error;
    const message = typeof e === "string" ? e : typeof e?.message === "string" ? e.message : "no message";
    const code = typeof e === "object" && typeof e?.code === "number" && e.code >= 400 && e.code <= 599 ? e.code : 502;
    // Its reason is read like a refused request's (OpenRouter's moderation or context errors arrive so).
    const tap = taps.getStore();
    if (tap) tap.rejected = { status: code, body: reply };
    return providerFault(res, code, `provider answered ${res.status} with an error (${code}): ${message.slice(0, 300)}`);
  }
  const tap = taps.getStore();
  if (tap) {
    tap.replied = true;
    const u = reply?.usage;
    tap.promptTokens = count(u?.prompt_tokens) ?? tap.promptTokens;
    tap.completionTokens = count(u?.completion_tokens) ?? tap.completionTokens;
    tap.cachedPromptTokens = count(u?.prompt_tokens_details?.cached_tokens ?? u?.prompt_cache_hit_tokens) ?? tap.cachedPromptTokens;
    tap.imageTokens = count(u?.prompt_tokens_details?.image_tokens) ?? tap.imageTokens;
    tap.reasoningTokens = count(u?.completion_tokens_details?.reasoning_tokens) ?? tap.reasoningTokens;
    // OpenRouter states each call's cost in usage.cost (openrouter.ai/docs/use-cases/usage-accounting).
    tap.costUsd = typeof u?.cost === "number" && Number.isFinite(u.cost) && u.cost >= 0 ? u.cost : tap.costUsd;
    const choice = reply?.choices?.[0];
    tap.message = choice?.message;
    if (typeof choice?.finish_reason === "string") tap.finishReason = choice.finish_reason;
    if (choice?.content_filter_results !== undefined) tap.contentFilterResults = choice.content_filter_results;
  }
  return new ParsedResponse(reply, text, { status: res.status, statusText: res.statusText, headers: headersOf(res, true) });
}
