import type { Config } from "../../core/config.js";
import type { CaseStore } from "./case-store.js";
import { checkDatabaseUrl, explainStoreOpenError } from "../../core/database/database-errors.js";
import { SqliteStore } from "./sqlite-store.js";
import { accessSigner } from "./access-signing.js";

export interface OpenStoreOptions {
  /** Postgres schema for the tables (default "public"); tests use a throwaway one. */
  pgSchema?: string;
}

/**
 * Postgres when a database URL is configured, else the embedded SQLite file under dataDir; initialised.
 * The Postgres store (pg and its checkpointer, ~60 ms to load) is imported only when it is the one used.
 */
export async function openStore(config: Pick<Config["store"], "databaseUrl" | "dataDir"> & Partial<Pick<Config["store"], "auditSigningKey">>, opts: OpenStoreOptions = {}): Promise<CaseStore> {
  if (config.databaseUrl) checkDatabaseUrl(config.databaseUrl);
  // The key stays in this process: the store gets a signer, never the key's text.
  const signer = config.auditSigningKey ? accessSigner(config.auditSigningKey) : null;
  const store: CaseStore = config.databaseUrl
    ? new (await import("./postgres-store.js")).PostgresStore({ connectionString: config.databaseUrl, schema: opts.pgSchema, accessSigner: signer })
    : new SqliteStore({ dataDir: config.dataDir, accessSigner: signer });
  try {
    await store.init();
  } catch (e) {
    await store.close().catch(() => undefined);
    throw explainStoreOpenError(e, config);
  }
  return store;
}
