import { z } from "zod";
import type { Config } from "../config.js";
import { MedmmvError } from "../errors.js";
import { withRetry } from "../llm/retry.js";
import { postJson } from "../llm/http-transport.js";
import type { SearchProvider, SearchResponse } from "./search-provider.js";

const TavilyReply = z.object({
  results: z.array(z.object({ title: z.string().default(""), url: z.string(), content: z.string().default(""), score: z.number().optional() })),
});

/**
 * Tavily's REST API (base URL configurable so tests and proxies work), on the same
 * keep-alive transport and retry layer as the model calls; results are capped in size
 * because they are untrusted.
 */
export class TavilySearch implements SearchProvider {
  readonly name = "tavily" as const;
  readonly enabled = true;
  constructor(private readonly cfg: Config["search"]) {}

  async search(query: string, opts: { signal?: AbortSignal; maxResults?: number }): Promise<SearchResponse> {
    const q = query.trim().slice(0, 400);
    if (!q) throw new MedmmvError("SEARCH_FAILED", "empty search query");
    return withRetry(
      "web search",
      { maxAttempts: 3, baseDelayMs: 300, maxRetryAfterMs: 10_000, timeoutMs: this.cfg.timeoutMs, failureCode: "SEARCH_FAILED" },
      opts.signal,
      async ({ signal }) => {
        const body = await postJson(
          `${this.cfg.baseUrl}/search`,
          { query: q, max_results: opts.maxResults ?? 3, search_depth: "basic", include_answer: false },
          { headers: { authorization: `Bearer ${this.cfg.apiKey}` }, signal },
        );
        const parsed = TavilyReply.safeParse(body);
        if (!parsed.success) throw new MedmmvError("SEARCH_FAILED", "search provider reply has an unexpected shape", { retryable: true });
        return {
          query: q,
          retrievedAt: new Date().toISOString(),
          results: parsed.data.results
            .filter((r) => /^https?:\/\//i.test(r.url))
            .slice(0, opts.maxResults ?? 3)
            .map((r) => ({ title: r.title.slice(0, 300), url: r.url.slice(0, 2000), content: r.content.slice(0, 4000), score: r.score })),
        };
      },
    );
  }
}
