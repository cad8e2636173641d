import { createHash } from "node:crypto";
import path from "node:path";

/**
 * Which deployment a process belongs to, from the store it writes to: two deployments are two
 * stores, and every replica of one deployment opens the same store. Used for the default Redis
 * key prefix (so deployments sharing one Redis keep separate queues without configuring
 * anything) and to tag each queued job with the deployment that queued it.
 */

/** The store's location without credentials or connection settings: host, port and database, or the SQLite directory. */
export function storeLocation(store: { databaseUrl: string | null; dataDir: string }): string {
  if (!store.databaseUrl) return `sqlite:${path.resolve(store.dataDir)}`;
  try {
    const u = new URL(store.databaseUrl);
    // A socket directory or a search path given as a parameter names another database too.
    const named = ["host", "port", "dbname", "options"].flatMap((k) => u.searchParams.getAll(k).map((v) => `${k}=${v}`));
    return `postgres://${u.hostname.toLowerCase()}:${u.port || "5432"}${u.pathname}${named.length ? `?${named.join("&")}` : ""}`;
  } catch {
    // Not a URL (a libpq keyword string): the text without its password.
    return `postgres:${store.databaseUrl.replace(/password\s*=\s*\S+/gi, "")}`;
  }
}

/** A short stable id of the deployment (16 hex digits of a hash of the store's location). */
export function deploymentId(store: { databaseUrl: string | null; dataDir: string }): string {
  return createHash("sha256").update(`medmmv:deployment:${storeLocation(store)}`).digest("hex").slice(0, 16);
}

/** MEDMMV_REDIS_PREFIX when it is not set: `medmmv-` and the deployment id, so each store gets its own keys. */
export function defaultRedisPrefix(store: { databaseUrl: string | null; dataDir: string }): string {
  return `medmmv-${deploymentId(store).slice(0, 12)}`;
}
