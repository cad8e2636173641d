import type { Config } from "../../config.js";
import { checkDatabaseUrl, explainStoreOpenError } from "../../database/database-errors.js";
import type { CorpusIndex } from "./corpus-index.js";
import { SqliteCorpusIndex } from "./sqlite-corpus-index.js";

export interface OpenCorpusIndexOptions {
  /** Postgres schema (default "public"); tests use a throwaway one. */
  pgSchema?: string;
}

/** The Postgres index's module, imported only where it is used: pg takes ~60 ms to load, which a SQLite deployment should not pay. */
const postgresIndex = () => import("./postgres-corpus-index.js");

/**
 * The corpus index on the configured store: Postgres with a database URL, else the embedded
 * SQLite file; initialised. A first-run failure is told like openStore's (what to change).
 */
export async function openCorpusIndex(store: Pick<Config["store"], "databaseUrl" | "dataDir">, opts: OpenCorpusIndexOptions = {}): Promise<CorpusIndex> {
  if (store.databaseUrl) checkDatabaseUrl(store.databaseUrl);
  const index: CorpusIndex = store.databaseUrl
    ? new (await postgresIndex()).PostgresCorpusIndex({ connectionString: store.databaseUrl, schema: opts.pgSchema })
    : new SqliteCorpusIndex(store.dataDir);
  try {
    await index.init();
  } catch (e) {
    await index.close().catch(() => undefined);
    throw explainStoreOpenError(e, store);
  }
  return index;
}

/**
 * Whether the configured store holds an indexed corpus, without creating anything (neither
 * the SQLite file nor the Postgres tables). Failures are told like openCorpusIndex's.
 */
export async function hasIndexedCorpus(store: Pick<Config["store"], "databaseUrl" | "dataDir">, opts: OpenCorpusIndexOptions = {}): Promise<boolean> {
  if (!store.databaseUrl) return SqliteCorpusIndex.hasCorpus(store.dataDir);
  checkDatabaseUrl(store.databaseUrl);
  try {
    return await (await postgresIndex()).PostgresCorpusIndex.hasCorpus({ connectionString: store.databaseUrl, schema: opts.pgSchema });
  } catch (e) {
    throw explainStoreOpenError(e, store);
  }
}
