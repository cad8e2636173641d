import { STATUS_CODES } from "node:http";
import { pipeline, type Readable } from "node:stream";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";
import { Agent, interceptors, request } from "undici";

/**
 * How a model request goes on the wire: undici's `request`, the HTTP client Node's own fetch
 * is built on, without fetch's WHATWG layer. A model call used to spend about 0.5 ms of CPU
 * in that layer alone (a copy of the prompt as well-formed UTF-16 then as UTF-8, a Request
 * and its abort-signal plumbing, the reply through web streams), on the critical path of
 * every parallel fan-out. What fetch did that a caller can see is kept: redirects followed
 * (the credentials dropped across origins), a compressed reply decompressed, an abort
 * rejected with the signal's reason, a network failure as fetch's `TypeError` with the
 * cause (ECONNREFUSED, a reset…) underneath, which is what the SDK and our retry layer read.
 */

/**
 * One connection pool for every model endpoint of the process (keep-alive, as fetch's was).
 * No clock of its own: undici would give up on a reply's headers or body after 300 s, while
 * a reasoning model may think longer and MEDMMV_LLM_TIMEOUT_MS may allow it; the per-attempt
 * timeout (retry.ts, through the abort signal) is the one that ends a call.
 */
const dispatcher = new Agent({ headersTimeout: 0, bodyTimeout: 0 }).compose(interceptors.redirect({ maxRedirections: 20 }));

export interface WireExchange {
  status: number;
  statusText: string;
  headers: Headers;
  /** The reply's bytes, decompressed when the server compressed them. */
  body: Readable;
}

/** Whether `send` can carry this request (the SDK's chat calls: a URL and a JSON string); anything else goes through fetch. */
export function sendable(input: Parameters<typeof fetch>[0], init: RequestInit | undefined): init is RequestInit {
  if (!init || (typeof input !== "string" && !(input instanceof URL))) return false;
  const body = init.body;
  return body === undefined || body === null || typeof body === "string" || body instanceof Uint8Array;
}

function requestHeaders(init: RequestInit, dropAuthorization: boolean): Record<string, string> {
  const headers: Record<string, string> = {};
  new Headers(init.headers).forEach((value, name) => {
    headers[name] = value;
  });
  if (dropAuthorization) delete headers.authorization;
  return headers;
}

function replyHeaders(raw: Record<string, string | string[] | undefined>): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(raw)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  return headers;
}

/** The reply's bytes as the server meant them: fetch decompressed gzip, deflate and br, and so does this. */
function decoded(body: Readable, encoding: string | null): Readable {
  const codec = encoding?.trim().toLowerCase();
  const inflate = codec === "gzip" || codec === "x-gzip" ? createGunzip() : codec === "deflate" ? createInflate() : codec === "br" ? createBrotliDecompress() : null;
  if (!inflate) return body;
  // pipeline() destroys both on an error of either, so a reader of `inflate` sees the failure.
  return pipeline(body, inflate, () => undefined);
}

/** An error as fetch would have rejected with it: the abort's reason, or a TypeError over the network failure. */
export function asFetchError(err: unknown, signal: AbortSignal | null | undefined, what: "fetch failed" | "terminated"): unknown {
  if (signal?.aborted) return signal.reason ?? err;
  return new TypeError(what, { cause: err });
}

/** Sends one request; the reply's body is the caller's to read (or destroy). */
export async function send(input: string | URL, init: RequestInit, opts: { dropAuthorization?: boolean } = {}): Promise<WireExchange> {
  const signal = init.signal ?? undefined;
  try {
    const res = await request(input, {
      method: (init.method ?? "GET") as "POST",
      headers: requestHeaders(init, opts.dropAuthorization === true),
      body: (init.body ?? null) as string | Uint8Array | null,
      signal,
      dispatcher,
    });
    const headers = replyHeaders(res.headers);
    return { status: res.statusCode, statusText: STATUS_CODES[res.statusCode] ?? "", headers, body: decoded(res.body, headers.get("content-encoding")) };
  } catch (err) {
    throw asFetchError(err, signal, "fetch failed");
  }
}
