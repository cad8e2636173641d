import type { Config } from "../config.js";
import { LocalSearch } from "./local/local-search.js";
import { hasIndexedCorpus, openCorpusIndex, type OpenCorpusIndexOptions } from "./local/open-corpus-index.js";
import { SqliteCorpusIndex } from "./local/sqlite-corpus-index.js";
import { NoSearch, type SearchProvider } from "./search-provider.js";
import { TavilySearch } from "./tavily.js";

function localSearch(config: Config, opts: OpenCorpusIndexOptions): LocalSearch {
  return new LocalSearch(() => openCorpusIndex(config.store, opts), { backend: config.store.databaseUrl ? "postgres" : "sqlite" });
}

const NOTHING_CONFIGURED = "web search disabled: TAVILY_API_KEY not set, and no local corpus indexed (medmmv corpus index FILE.jsonl)";

/**
 * The provider MEDMMV_SEARCH names; unset: Tavily with a key, else the local corpus when
 * the embedded store holds one, else none. Synchronous, for the Pipeline's constructor:
 * on Postgres the "is a corpus indexed?" default needs a query, so there use
 * openSearchProvider (or MEDMMV_SEARCH=local).
 */
export function createSearchProvider(config: Config, opts: OpenCorpusIndexOptions = {}): SearchProvider {
  const s = config.search;
  if (s.provider === "tavily") return new TavilySearch(s);
  if (s.provider === "local") return localSearch(config, opts);
  if (!s.auto) return new NoSearch("search disabled: MEDMMV_SEARCH=none");
  if (!config.store.databaseUrl && SqliteCorpusIndex.hasCorpus(config.store.dataDir)) return localSearch(config, opts);
  return new NoSearch(NOTHING_CONFIGURED);
}

/** createSearchProvider, with the default also looking for a corpus in Postgres. */
export async function openSearchProvider(config: Config, opts: OpenCorpusIndexOptions = {}): Promise<SearchProvider> {
  const chosen = createSearchProvider(config, opts);
  if (chosen.name !== "none" || !config.search.auto || !config.store.databaseUrl) return chosen;
  return (await hasIndexedCorpus(config.store, opts)) ? localSearch(config, opts) : chosen;
}
