import type { TavilyClient } from "@tavily/core";
import { z } from "zod";
import type { Config } from "../config.js";
import { MedmmvError } from "../errors.js";
import { withRetry } from "../llm/retry.js";
import type { SearchProvider, SearchResponse } from "./search-provider.js";

const TavilyResults = z.array(z.object({ title: z.string().default(""), url: z.string(), content: z.string().default(""), score: z.number().optional() }));

/**
 * @tavily/core turns an HTTP error into a plain Error: its message is the server's
 * `detail.error`, or "<status> Error: <body>" when there is none. Read back what says the
 * request itself was refused (no retry can help), so our retry layer does not repeat it.
 */
export function tavilyRefusal(err: unknown): boolean {
  const message = err instanceof Error ? err.message : String(err);
  const status = /^(\d{3}) Error:/.exec(message)?.[1];
  if (status) return status.startsWith("4") && status !== "408" && status !== "409" && status !== "429";
  return /unauthori[sz]ed|invalid api key|forbidden|exceeds your plan|usage limit/i.test(message);
}

/** Settle with the attempt's abort (our per-attempt timeout or the case's cancel) even though the library takes no signal. */
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
 * proxies work, inside our one retry layer. The client's own timeout is the attempt's,
 * so a hung server has its connection closed when the attempt gives up. Results are
 * capped in size because they are untrusted.
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

  /** Loaded on first use: the client pulls in axios and a tokenizer (~18 MB of heap) that a process without web search should not pay for. */
  #tavily(): Promise<TavilyClient> {
    // An explicit key: the client would otherwise fall back to keyless mode or read the environment itself.
    this.#client ??= import("@tavily/core").then(({ tavily }) => tavily({ apiKey: this.#apiKey, apiBaseURL: this.cfg.baseUrl }));
    return this.#client;
  }

  async search(query: string, opts: { signal?: AbortSignal; maxResults?: number }): Promise<SearchResponse> {
    const q = query.trim().slice(0, 400);
    if (!q) throw new MedmmvError("SEARCH_FAILED", "empty search query");
    const max = opts.maxResults ?? 3;
    return withRetry(
      "web search",
      { maxAttempts: 3, baseDelayMs: 300, maxRetryAfterMs: 10_000, timeoutMs: this.cfg.timeoutMs, failureCode: "SEARCH_FAILED" },
      opts.signal,
      async ({ signal }) => {
        let reply;
        try {
          const client = await this.#tavily();
          reply = await untilAborted(client.search(q, { maxResults: max, searchDepth: "basic", includeAnswer: false, timeout: this.cfg.timeoutMs / 1000 }), signal);
        } catch (err) {
          if (signal.aborted || !tavilyRefusal(err)) throw err;
          throw new MedmmvError("SEARCH_FAILED", `web search: provider refused the request: ${err instanceof Error ? err.message.slice(0, 200) : "unknown error"}`, { cause: err, retryable: false });
        }
        const parsed = TavilyResults.safeParse(reply.results);
        if (!parsed.success) throw new MedmmvError("SEARCH_FAILED", "search provider reply has an unexpected shape", { retryable: true });
        return {
          query: q,
          retrievedAt: new Date().toISOString(),
          results: parsed.data
            .filter((r) => /^https?:\/\//i.test(r.url))
            .slice(0, max)
            .map((r) => ({ title: r.title.slice(0, 300), url: r.url.slice(0, 2000), content: r.content.slice(0, 4000), score: r.score })),
        };
      },
    );
  }
}
