import http from "node:http";
import https from "node:https";
import { brotliDecompressSync, gunzipSync, inflateSync } from "node:zlib";

/**
 * The HTTP transport of every outbound JSON call (model endpoint, web search): node:http(s)
 * with keep-alive agents, the body buffered, nothing else.
 *
 * Why not the built-in fetch or an SDK: a case makes 35–65 calls, most of them in bursts
 * (k rollouts, 8 search analyses, m refinements) whose CPU queues on one event loop, and
 * that queue is what stretches a case's wall time beyond its critical path. Measured by
 * `npm run bench` (orchestration overhead): the built-in fetch (undici, web streams) costs
 * about twice the CPU of this per call, and the SDK/LangChain layers on top of it cost
 * more than the transport itself.
 */
const agents = {
  "http:": new http.Agent({ keepAlive: true }),
  "https:": new https.Agent({ keepAlive: true }),
};

/** A reply larger than this is refused: model and search replies are untrusted input. */
export const MAX_REPLY_BYTES = 32 * 1024 * 1024;
const MAX_REDIRECTS = 3;

export interface HttpRequest {
  method: "GET" | "POST" | "DELETE";
  headers?: Record<string, string>;
  body?: Buffer;
  signal?: AbortSignal;
}

export interface HttpReply {
  status: number;
  /** Lower-case header names, as node:http gives them. */
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/**
 * A non-2xx reply. `status` and `headers` are what the retry layer reads (429, 5xx,
 * Retry-After); the message keeps the provider's own error text, shortened.
 */
export class HttpStatusError extends Error {
  override readonly name = "HttpStatusError";
  constructor(
    readonly status: number,
    readonly headers: http.IncomingHttpHeaders,
    message: string,
  ) {
    super(message);
  }
}

/**
 * A 2xx reply whose body is not JSON (a proxy's HTML page, a truncated body). It carries
 * no status, so the retry layer treats it as a transient fault of the provider.
 */
export class ReplyNotJsonError extends Error {
  override readonly name = "ReplyNotJsonError";
  constructor(status: number, contentType: string | undefined, bytes: number) {
    super(`HTTP ${status} reply is not JSON (${contentType ?? "no content-type"}, ${bytes} bytes)`);
  }
}

function abortError(signal: AbortSignal): unknown {
  // The retry layer tells a timeout or cancellation from a network error by the AbortError name.
  return signal.reason instanceof Error ? signal.reason : new DOMException("This operation was aborted", "AbortError");
}

function decode(buf: Buffer, encoding: string | undefined): Buffer {
  switch ((encoding ?? "").trim().toLowerCase()) {
    case "gzip":
    case "x-gzip":
      return gunzipSync(buf);
    case "deflate":
      return inflateSync(buf);
    case "br":
      return brotliDecompressSync(buf);
    default:
      return buf;
  }
}

/** One request, the whole reply buffered and decoded. Follows 307/308 (method and body kept). */
export function httpRequest(url: string | URL, req: HttpRequest, redirects = 0): Promise<HttpReply> {
  const target = typeof url === "string" ? new URL(url) : url;
  const agent = agents[target.protocol as keyof typeof agents];
  if (!agent) return Promise.reject(new TypeError(`unsupported protocol ${target.protocol} (http: or https: only)`));
  const signal = req.signal;
  if (signal?.aborted) return Promise.reject(abortError(signal));

  return new Promise<HttpReply>((resolve, reject) => {
    const lib = target.protocol === "https:" ? https : http;
    const headers: Record<string, string> = { ...req.headers };
    if (req.body !== undefined) headers["content-length"] = String(req.body.length);
    let settled = false;
    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener("abort", onAbort);
      fn();
    };
    const request = lib.request(target, { method: req.method, headers, agent }, (res) => {
      const status = res.statusCode ?? 0;
      if ((status === 307 || status === 308) && res.headers.location && redirects < MAX_REDIRECTS) {
        res.resume();
        finish(() => resolve(httpRequest(new URL(res.headers.location!, target), req, redirects + 1)));
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on("data", (c: Buffer) => {
        size += c.length;
        if (size > MAX_REPLY_BYTES) {
          res.destroy();
          finish(() => reject(new HttpStatusError(status, res.headers, `reply larger than ${MAX_REPLY_BYTES} bytes`)));
          return;
        }
        chunks.push(c);
      });
      res.on("error", (err) => finish(() => reject(err)));
      res.on("end", () =>
        finish(() => {
          try {
            resolve({ status, headers: res.headers, body: decode(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks), res.headers["content-encoding"]) });
          } catch (err) {
            reject(err);
          }
        }),
      );
    });
    const onAbort = () => {
      const err = abortError(signal!);
      request.destroy(err instanceof Error ? err : undefined);
      finish(() => reject(err));
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    request.on("error", (err) => finish(() => reject(err)));
    request.end(req.body);
  });
}

/** The provider's own error text from a JSON error body ({error: {message}} or {message}), shortened. */
function providerMessage(body: Buffer): string {
  const text = body.subarray(0, 4096).toString("utf8");
  try {
    const parsed = JSON.parse(body.toString("utf8")) as { error?: { message?: unknown } | string; message?: unknown; detail?: unknown };
    const m = typeof parsed.error === "string" ? parsed.error : (parsed.error?.message ?? parsed.message ?? parsed.detail);
    if (typeof m === "string") return m.slice(0, 300);
  } catch {
    // not JSON: fall through to the raw text
  }
  return text.replace(/\s+/g, " ").trim().slice(0, 300);
}

/**
 * POST a JSON body (a value to serialise, or bytes already encoded) and return the parsed
 * JSON reply. A non-2xx status throws HttpStatusError; a 2xx body that is not JSON throws
 * ReplyNotJsonError.
 */
export async function postJson(url: string, body: unknown, opts: { headers?: Record<string, string>; signal?: AbortSignal }): Promise<unknown> {
  const reply = await httpRequest(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json", ...opts.headers },
    // Encoded once: a string body would be measured and then encoded again by the socket,
    // and a prompt carrying images is tens of kilobytes.
    body: Buffer.isBuffer(body) ? body : Buffer.from(JSON.stringify(body)),
    signal: opts.signal,
  });
  if (reply.status < 200 || reply.status > 299) throw new HttpStatusError(reply.status, reply.headers, `HTTP ${reply.status}: ${providerMessage(reply.body)}`);
  try {
    return JSON.parse(reply.body.toString("utf8"));
  } catch {
    throw new ReplyNotJsonError(reply.status, reply.headers["content-type"], reply.body.length);
  }
}
