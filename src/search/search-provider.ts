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

export class NoSearch implements SearchProvider {
  readonly name = "none" as const;
  readonly enabled = false;
  constructor(readonly note = "web search disabled: TAVILY_API_KEY not set") {}
  async search(query: string): Promise<SearchResponse> {
    return { query, results: [], retrievedAt: new Date().toISOString() };
  }
}
