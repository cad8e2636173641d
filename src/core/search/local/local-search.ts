import { MedmmvError } from "../../contracts/errors.js";
import { capResult, DEFAULT_MAX_RESULTS, searchQuery, type SearchProvider, type SearchResponse } from "../search-provider.js";
import type { CorpusIndex } from "./corpus-index.js";
import { hitUrl } from "./corpus-record.js";

/** Passages fetched per wanted result, so several chunks of one document still leave room for others. */
const OVERFETCH = 3;

/**
 * `MEDMMV_SEARCH=local`: the user's own literature corpus, searched in the store: no
 * query goes to a web service. The index is opened on the first search, so a pipeline that never
 * searches never touches the store. Hits are returned like web results (title, url,
 * content) and are just as untrusted: the web-search agent fences them the same way.
 */
export class LocalSearch implements SearchProvider {
  readonly name = "local" as const;
  readonly enabled = true;
  readonly note: string;
  #index: Promise<CorpusIndex> | null = null;

  constructor(
    private readonly open: () => Promise<CorpusIndex>,
    opts: { backend: "sqlite" | "postgres" },
  ) {
    this.note = `local literature corpus (${opts.backend === "postgres" ? "Postgres full-text search" : "SQLite FTS5, BM25"}, every indexed corpus); no query goes to a web service`;
  }

  #opened(): Promise<CorpusIndex> {
    if (!this.#index) {
      this.#index = this.open();
      // A failed open is tried again by the next search instead of being remembered.
      this.#index.catch(() => (this.#index = null));
    }
    return this.#index;
  }

  async search(query: string, opts: { signal?: AbortSignal; maxResults?: number }): Promise<SearchResponse> {
    if (opts.signal?.aborted) throw new MedmmvError("ABORTED", "local search: aborted");
    const q = searchQuery(query);
    const max = opts.maxResults ?? DEFAULT_MAX_RESULTS;
    let hits;
    try {
      const index = await this.#opened();
      hits = await index.search(q, { limit: max * OVERFETCH });
    } catch (err) {
      throw new MedmmvError("SEARCH_FAILED", `local corpus search failed: ${err instanceof Error ? err.message.slice(0, 200) : String(err)}`, { cause: err });
    }
    const seen = new Set<string>();
    const best = hits.filter((h) => {
      const key = `${h.corpus}\u0000${h.docId}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
    return {
      query: q,
      retrievedAt: new Date().toISOString(),
      results: best
        .slice(0, max)
        .map((h) => capResult({ title: h.source ? `${h.title} (${h.source})` : h.title, url: hitUrl(h.corpus, h.docId, h.url), content: h.text, score: h.score })),
    };
  }

  async close(): Promise<void> {
    const index = this.#index;
    this.#index = null;
    if (index) await (await index.catch(() => null))?.close();
  }
}
