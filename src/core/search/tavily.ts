import { AsyncLocalStorage } from "node:async_hooks";
import type { TavilyClient } from "@tavily/core";
import type { AxiosError, AxiosStatic } from "axios";
import { z } from "zod";
import type { Config } from "../config.js";
import { MedmmvError } from "../contracts/errors.js";
import { withRetry } from "../llm/retry.js";
import { capResult, DEFAULT_MAX_RESULTS, searchQuery, type SearchProvider, type SearchResponse } from "./search-provider.js";

const TavilyResults = z.array(z.object({ title: z.string().default(""), url: z.string(), content: z.string().default(""), score: z.number().optional() }));

/**
 * What one attempt's HTTP exchange showed. @tavily/core takes no abort signal and turns an
 * HTTP error into a plain Error (losing the status and Retry-After), so two interceptors on
 * the axios instance it posts through (axios' default export, the same module as ours)
 * carry the attempt's signal in and the error's status and headers out, for the requests
 * made inside `attempts.run` only: every other axios user in the process is untouched.
 */
interface TavilyAttempt {
  signal: AbortSignal;
  http?: { status: number; headers: unknown };
}
const attempts = new AsyncLocalStorage<TavilyAttempt>();
let hooked = false;

function hookAxios(axios: AxiosStatic): void {
  if (hooked) return;
  hooked = true;
  axios.interceptors.request.use((config) => {
    const attempt = attempts.getStore();
    // An abort (our per-attempt timeout or the case's cancel) now closes the connection.
    if (attempt && !config.signal) config.signal = attempt.signal;
    return config;
  });
  axios.interceptors.response.use(undefined, (err: AxiosError) => {
    const attempt = attempts.getStore();
    if (attempt && err?.response) attempt.http = { status: err.response.status, headers: err.response.headers };
    return Promise.reject(err);
  });
}

/** A Tavily HTTP error as our retry layer reads it: status and headers (Retry-After), and the library's message. */
class TavilyHttpError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly headers: unknown,
  ) {
    super(message);
    this.name = "TavilyHttpError";
  }
}

/**
 * When no status was seen (an error before the interceptor read the reply), the status
 * @tavily/core's message may still carry: it is "<status> Error: <body>" when the server
 * sent no `detail.error`.
 */
export function tavilyMessageStatus(err: unknown): number | null {
  const message = err instanceof Error ? err.message : String(err);
  const status = /^(\d{3}) Error:/.exec(message)?.[1];
  return status ? Number(status) : null;
}

/**
 * With no status at all, whether @tavily/core's message (the server's `detail.error`) says
 * the request itself was refused, so no retry can help.
 */
export function tavilyRefusal(err: unknown): boolean {
  const message = err instanceof Error ? err.message : String(err);
  return /unauthori[sz]ed|invalid api key|forbidden|exceeds your plan|usage limit/i.test(message);
}

/** Settle with the attempt's abort at once, whatever the library does with the signal it was given. */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/**
 * Tavily through its official client (@tavily/core), base URL configurable so tests and
 * proxies work, inside our one retry layer. The attempt's signal reaches the request
 * (hookAxios), so a per-attempt timeout or a cancelled case closes the connection, and a
 * Retry-After is honoured. Results are capped in size because they are untrusted.
 */
export class TavilySearch implements SearchProvider {
  readonly name = "tavily" as const;
  readonly enabled = true;
  readonly #apiKey: string;
  #client: Promise<TavilyClient> | null = null;

  constructor(private readonly cfg: Config["search"]) {
    if (!cfg.apiKey) throw new MedmmvError("CONFIG_MISSING", "Tavily search needs TAVILY_API_KEY");
    this.#apiKey = cfg.apiKey;
  }

  /** Loaded on first use, with axios: the client pulls in axios and a tokenizer (~18 MB of heap, ~0.5 MB of code to compile) that a process without web search should not pay for. */
  #tavily(): Promise<TavilyClient> {
    // An explicit key: the client would otherwise fall back to keyless mode or read the environment itself.
    this.#client ??= Promise.all([import("axios"), import("@tavily/core")]).then(([{ default: axios }, { tavily }]) => {
      hookAxios(axios);
      return tavily({ apiKey: this.#apiKey, apiBaseURL: this.cfg.baseUrl });
    });
    return this.#client;
  }

  async search(query: string, opts: { signal?: AbortSignal; maxResults?: number }): Promise<SearchResponse> {
    const q = searchQuery(query);
    const max = opts.maxResults ?? DEFAULT_MAX_RESULTS;
    return withRetry(
      "web search",
      { maxAttempts: 3, baseDelayMs: 300, maxRetryAfterMs: 10_000, timeoutMs: this.cfg.timeoutMs, failureCode: "SEARCH_FAILED" },
      opts.signal,
      async ({ signal }) => {
        let reply;
        const attempt: TavilyAttempt = { signal };
        try {
          const client = await this.#tavily();
          // The library's own timeout is a backstop just past ours, so that a timeout is always reported as ours.
          const search = attempts.run(attempt, () => client.search(q, { maxResults: max, searchDepth: "basic", includeAnswer: false, timeout: (this.cfg.timeoutMs + 5_000) / 1000 }));
          reply = await untilAborted(search, signal);
        } catch (err) {
          if (signal.aborted) throw err;
          const message = err instanceof Error ? err.message.slice(0, 200) : "unknown error";
          // A known status goes to the retry layer, which alone decides refused or retryable.
          const status = attempt.http?.status ?? tavilyMessageStatus(err);
          if (status !== null) throw new TavilyHttpError(message, status, attempt.http?.headers);
          if (tavilyRefusal(err)) throw new MedmmvError("SEARCH_FAILED", `web search: provider refused the request: ${message}`, { cause: err, retryable: false });
          throw err;
        }
        const parsed = TavilyResults.safeParse(reply.results);
        if (!parsed.success) throw new MedmmvError("SEARCH_FAILED", "search provider reply has an unexpected shape", { retryable: true });
        return {
          query: q,
          retrievedAt: new Date().toISOString(),
          results: parsed.data
            .filter((r) => /^https?:\/\//i.test(r.url))
            .slice(0, max)
            .map(capResult),
        };
      },
    );
  }
}
