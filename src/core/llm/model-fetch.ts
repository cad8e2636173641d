import { AsyncLocalStorage } from "node:async_hooks";
import { readCappedBody } from "../net/read-capped-body.js";

/**
 * The fetch under the OpenAI SDK (ChatOpenAI's `configuration.fetch`). The SDK builds the
 * request; this only looks at the reply before the SDK does, for what the SDK takes at face
 * value: a 2xx body that is an error object, not JSON, or unboundedly large. Model replies
 * are untrusted input.
 */

/** A reply larger than this is refused. */
export const MAX_REPLY_BYTES = 32 * 1024 * 1024;

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
  /** The first choice's message as sent, for reading the JSON the SDK refused. */
  message?: WireMessage;
}

export interface WireMessage {
  content?: unknown;
  tool_calls?: Array<{ function?: { arguments?: unknown } }>;
}

const taps = new AsyncLocalStorage<ReplyTap>();

/** Runs one model attempt with `tap` collecting what its HTTP reply showed. */
export function withReplyTap<T>(tap: ReplyTap, run: () => Promise<T>): Promise<T> {
  return taps.run(tap, run);
}

/** A reply the SDK will read as an HTTP error with this status (and so our retry layer too). */
function providerFault(from: Response, status: number, message: string): Response {
  const headers = new Headers(from.headers);
  headers.delete("content-length");
  headers.delete("content-encoding");
  headers.set("content-type", "application/json");
  return new Response(JSON.stringify({ error: { message, type: "provider_fault", code: null } }), { status, headers });
}

interface WireReply {
  error?: { message?: unknown; code?: unknown } | string;
  choices?: Array<{ message?: WireMessage }>;
  usage?: { prompt_tokens?: unknown; completion_tokens?: unknown; prompt_tokens_details?: { cached_tokens?: unknown; image_tokens?: unknown } | null; prompt_cache_hit_tokens?: unknown };
}

/**
 * The fetch for one chat model. `withoutAuthorization`: the endpoint has no key (a local
 * vLLM or Ollama); the SDK insists on one, so it is given a placeholder that is dropped here
 * and never sent (a proxy may refuse a bearer token it does not know).
 */
export function guardedFetch(opts: { withoutAuthorization?: boolean } = {}): typeof fetch {
  return async (input, init) => {
    if (!opts.withoutAuthorization || !init) return guardReply(await fetch(input, init));
    const headers = new Headers(init.headers);
    headers.delete("authorization");
    return guardReply(await fetch(input, { ...init, headers }));
  };
}

async function guardReply(res: Response): Promise<Response> {
  if (!res.ok || !res.body) return res;
  const bytes = await readCappedBody(res, MAX_REPLY_BYTES);
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
    return providerFault(res, code, `provider answered ${res.status} with an error (${code}): ${message.slice(0, 300)}`);
  }
  const tap = taps.getStore();
  if (tap) {
    tap.replied = true;
    const u = reply?.usage;
    if (typeof u?.prompt_tokens === "number") tap.promptTokens = u.prompt_tokens;
    if (typeof u?.completion_tokens === "number") tap.completionTokens = u.completion_tokens;
    const cached = u?.prompt_tokens_details?.cached_tokens ?? u?.prompt_cache_hit_tokens;
    if (typeof cached === "number") tap.cachedPromptTokens = cached;
    const imageTokens = u?.prompt_tokens_details?.image_tokens;
    if (typeof imageTokens === "number" && Number.isFinite(imageTokens) && imageTokens >= 0) tap.imageTokens = Math.round(imageTokens);
    tap.message = reply?.choices?.[0]?.message;
  }
  const headers = new Headers(res.headers);
  headers.delete("content-length");
  headers.delete("content-encoding");
  return new Response(text, { status: res.status, statusText: res.statusText, headers });
}
