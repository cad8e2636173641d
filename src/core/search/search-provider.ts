import { MedmmvError } from "../contracts/errors.js";

/** Literature search behind one interface (web or local corpus); results are untrusted text. */
export interface SearchResult {
  title: string;
  url: string;
  content: string;
  score?: number;
}
export interface SearchResponse {
  query: string;
  results: SearchResult[];
  retrievedAt: string;
}
export interface SearchProvider {
  readonly name: "tavily" | "local" | "none";
  readonly enabled: boolean;
  /** Why search is off, for provenance (e.g. "TAVILY_API_KEY not set"). */
  readonly note?: string;
  search(query: string, opts: { signal?: AbortSignal; maxResults?: number }): Promise<SearchResponse>;
  /** Release what the provider holds (the local corpus's store connection). */
  close?(): Promise<void>;
}

/** Results per search when the caller does not say. */
export const DEFAULT_MAX_RESULTS = 3;

/** The query as every provider sends it: trimmed and capped; an empty one is refused. */
export function searchQuery(query: string): string {
  const q = query.trim().slice(0, 400);
  if (!q) throw new MedmmvError("SEARCH_FAILED", "empty search query");
  return q;
}

/**
 * One result cut to the sizes the prompt allows. Results are untrusted text, so every
 * provider caps them the same way, whatever its source returned.
 */
export function capResult(r: SearchResult): SearchResult {
  return { title: r.title.slice(0, 300), url: r.url.slice(0, 2000), content: r.content.slice(0, 4000), score: r.score };
}

export class NoSearch implements SearchProvider {
  readonly name = "none" as const;
  readonly enabled = false;
  constructor(readonly note = "web search disabled: TAVILY_API_KEY not set") {}
  async search(query: string): Promise<SearchResponse> {
    return { query, results: [], retrievedAt: new Date().toISOString() };
  }
}
