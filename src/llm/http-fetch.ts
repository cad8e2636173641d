import http from "node:http";
import https from "node:https";
import { brotliDecompressSync, gunzipSync, inflateSync } from "node:zlib";

/**
 * A `fetch` for the OpenAI SDK over node:http(s) with keep-alive agents.
 *
 * Why: Node's built-in fetch (undici, web streams) cost ≈ 2.5 ms of CPU per model call
 * on the 2-core benchmark machine, against ≈ 1.2 ms for this (`npm run bench`, section
 * "Orchestration overhead"). A case makes 35–65 calls, most of them in bursts (k
 * rollouts, 8 search analyses, m refinements), and their CPU queues on one event loop:
 * that queue is what stretched a case's wall time beyond its critical path.
 *
 * Scope: the SDK's non-streaming JSON requests (string or byte body, headers, abort
 * signal); the reply is buffered into a standard Response. Anything else (a streamed
 * body, form data, a redirect) is handed to the built-in fetch, so behaviour is unchanged.
 */
const agents = {
  "http:": new http.Agent({ keepAlive: true }),
  "https:": new https.Agent({ keepAlive: true }),
};

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

function abortError(signal: AbortSignal): unknown {
  // The SDK tells a timeout or cancellation from a network error by the AbortError name.
  return signal.reason instanceof Error && signal.reason.name === "AbortError" ? signal.reason : new DOMException("This operation was aborted", "AbortError");
}

function headerRecord(h: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (!h) return out;
  if (h instanceof Headers) h.forEach((v, k) => (out[k] = v));
  else if (Array.isArray(h)) for (const [k, v] of h as Array<[string, string]>) out[k.toLowerCase()] = v;
  else for (const [k, v] of Object.entries(h as Record<string, unknown>)) if (v !== undefined && v !== null) out[k.toLowerCase()] = String(v);
  return out;
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

export const httpFetch: typeof fetch = (input, init) => {
  const body = init?.body;
  const simpleBody = body === undefined || body === null || typeof body === "string" || body instanceof Uint8Array;
  if (typeof input !== "string" && !(input instanceof URL)) return fetch(input, init);
  const url = new URL(input);
  const agent = agents[url.protocol as keyof typeof agents];
  if (!agent || !simpleBody) return fetch(input, init);
  const signal = init?.signal ?? undefined;
  if (signal?.aborted) return Promise.reject(abortError(signal));

  return new Promise<Response>((resolve, reject) => {
    const lib = url.protocol === "https:" ? https : http;
    const headers = headerRecord(init?.headers);
    if (body !== undefined && body !== null) headers["content-length"] = String(typeof body === "string" ? Buffer.byteLength(body) : body.byteLength);
    let settled = false;
    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener("abort", onAbort);
      fn();
    };
    const req = lib.request(url, { method: init?.method ?? "GET", headers, agent }, (res) => {
      const status = res.statusCode ?? 0;
      if (REDIRECTS.has(status) && res.headers.location) {
        res.resume();
        finish(() => resolve(fetch(input, init)));
        return;
      }
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("error", (err) => finish(() => reject(err)));
      res.on("end", () =>
        finish(() => {
          try {
            const out = new Headers();
            for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) out.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
            // The body is decoded here, so the encoding header must not make anyone decode it twice.
            const encoding = res.headers["content-encoding"];
            const data = decode(Buffer.concat(chunks), encoding);
            if (encoding) out.delete("content-encoding");
            resolve(new Response(NULL_BODY.has(status) ? null : new Uint8Array(data.buffer as ArrayBuffer, data.byteOffset, data.byteLength), { status, statusText: res.statusMessage ?? "", headers: out }));
          } catch (err) {
            reject(err);
          }
        }),
      );
    });
    const onAbort = () => {
      const err = abortError(signal!);
      req.destroy(err instanceof Error ? err : undefined);
      finish(() => reject(err));
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    req.on("error", (err) => finish(() => reject(err)));
    req.end(body ?? undefined);
  });
};
