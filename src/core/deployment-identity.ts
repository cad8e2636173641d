import { createHash } from "node:crypto";
import { realpathSync } from "node:fs";
import { userInfo } from "node:os";
import path from "node:path";

/**
 * Which deployment a process belongs to, from the store it writes to: two deployments are two
 * stores, and every replica of one deployment opens the same store. Used for the default Redis
 * key prefix (so deployments sharing one Redis keep separate queues without configuring
 * anything) and to tag each queued job with the deployment that queued it.
 */

type Env = Record<string, string | undefined>;

/**
 * The store's location without credentials or connection settings, resolved the way the
 * driver resolves it (node-postgres, like libpq): what the URL leaves out comes from PGHOST,
 * PGPORT and PGDATABASE, and a database named nowhere is the user's name (the URL's, PGUSER,
 * the OS user). Two deployments whose URLs read alike but whose environments name different
 * databases are two stores, and get two queues. SQLite: the data directory, symbolic links
 * followed.
 */
export function storeLocation(store: { databaseUrl: string | null; dataDir: string }, env: Env = process.env): string {
  if (!store.databaseUrl) {
    const dir = path.resolve(store.dataDir);
    try {
      return `sqlite:${realpathSync(dir)}`;
    } catch {
      return `sqlite:${dir}`; // not created yet
    }
  }
  try {
    const u = new URL(store.databaseUrl);
    const param = (k: string) => u.searchParams.get(k) || undefined;
    const host = (param("host") ?? (decodeURIComponent(u.hostname) || env.PGHOST || "localhost")).toLowerCase();
    const port = param("port") ?? (u.port || env.PGPORT || "5432");
    const user = decodeURIComponent(u.username) || env.PGUSER || osUser();
    const database = param("dbname") ?? (decodeURIComponent(u.pathname.replace(/^\//, "")) || env.PGDATABASE || user);
    const options = u.searchParams.getAll("options");
    return `postgres://${host}:${port}/${database}${options.length ? `?${options.map((o) => `options=${o}`).join("&")}` : ""}`;
  } catch {
    // Not a URL (a libpq keyword string): the text without its password, and the environment it leans on.
    return `postgres:${store.databaseUrl.replace(/password\s*=\s*\S+/gi, "")} ${["PGHOST", "PGPORT", "PGDATABASE"].map((k) => `${k}=${env[k] ?? ""}`).join(" ")}`;
  }
}

function osUser(): string {
  try {
    return userInfo().username;
  } catch {
    return "";
  }
}

/** A short stable id of the deployment (16 hex digits of a hash of the store's location). */
export function deploymentId(store: { databaseUrl: string | null; dataDir: string }, env: Env = process.env): string {
  return createHash("sha256").update(`medmmv:deployment:${storeLocation(store, env)}`).digest("hex").slice(0, 16);
}

/** MEDMMV_REDIS_PREFIX when it is not set: `medmmv-` and the deployment id, so each store gets its own keys. */
export function defaultRedisPrefix(store: { databaseUrl: string | null; dataDir: string }, env: Env = process.env): string {
  return `medmmv-${deploymentId(store, env).slice(0, 12)}`;
}
