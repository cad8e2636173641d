/**
 * A Postgres cluster and a redis-server of a test's own, on ports of their own, that the
 * test may kill and restart without disturbing any other suite (they share nothing with
 * the machine's Postgres on 5432 or Redis on 6379). Postgres data lives in a temp dir and
 * is fsync-free; Redis keeps nothing on disk, so a restart empties it.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { chownSync, existsSync, readdirSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { Redis } from "ioredis";
import { closedPort } from "./closed-port.js";
import { until } from "./until.js";

/** The newest PostgreSQL server binaries on this machine, or null. */
export function postgresBin(): string | null {
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return null;
  const versions = readdirSync(root).filter((v) => existsSync(path.join(root, v, "bin", "initdb"))).sort((a, b) => Number(b) - Number(a));
  return versions[0] ? path.join(root, versions[0], "bin") : null;
}

export interface ThrowawayService {
  url: string;
  /** Stop it (SIGKILL for Redis; a fast shutdown for Postgres) and start it again on the same port. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

function exitOf(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((r) => child.once("exit", () => r()));
}

/** Postgres refuses to run as root: as root, run it as the `postgres` user (the package creates it). */
function postgresUser(): { uid: number; gid: number } | Record<string, never> {
  if (process.getuid?.() !== 0) return {};
  const uid = Number(spawnSync("id", ["-u", "postgres"], { encoding: "utf8" }).stdout.trim());
  const gid = Number(spawnSync("id", ["-g", "postgres"], { encoding: "utf8" }).stdout.trim());
  if (!Number.isInteger(uid) || !Number.isInteger(gid)) throw new Error("running as root, and there is no `postgres` user to run a throwaway Postgres as");
  return { uid, gid };
}

export async function startThrowawayPostgres(): Promise<ThrowawayService> {
  const bin = postgresBin();
  if (!bin) throw new Error("no PostgreSQL server binaries under /usr/lib/postgresql");
  const as = postgresUser();
  const dir = await mkdtemp(path.join(tmpdir(), "medmmv-pg-"));
  if ("uid" in as) chownSync(dir, as.uid, as.gid);
  const data = path.join(dir, "data");
  const init = spawnSync(path.join(bin, "initdb"), ["-D", data, "-A", "trust", "-U", "postgres", "--no-sync"], { encoding: "utf8", ...as });
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr}`);
  const port = await closedPort();
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  let child: ChildProcess;
  const start = async (): Promise<void> => {
    child = spawn(path.join(bin, "postgres"), ["-D", data, "-p", String(port), "-k", dir, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=200"], { stdio: "ignore", ...as });
    await until(async () => {
      const c = new pg.Client({ connectionString: url });
      try {
        await c.connect();
        await c.query("SELECT 1");
        return true;
      } catch {
        return undefined;
      } finally {
        await c.end().catch(() => undefined);
      }
    }, 30_000, "the throwaway Postgres to accept connections");
  };
  await start();
  return {
    url,
    async restart() {
      child.kill("SIGINT"); // fast shutdown: connections are cut, as in a database restart
      await exitOf(child);
      await start();
    },
    async stop() {
      child.kill("SIGINT");
      await exitOf(child);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export async function startThrowawayRedis(): Promise<ThrowawayService> {
  const port = await closedPort();
  const url = `redis://127.0.0.1:${port}`;
  let child: ChildProcess;
  const start = async (): Promise<void> => {
    child = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], { stdio: "ignore" });
    await until(async () => {
      const r = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      r.on("error", () => undefined); // not up yet: asked again
      try {
        await r.connect();
        return (await r.ping()) === "PONG" ? true : undefined;
      } catch {
        return undefined;
      } finally {
        r.disconnect();
      }
    }, 30_000, "the throwaway Redis to answer");
  };
  await start();
  return {
    url,
    async restart() {
      child.kill("SIGKILL"); // no persistence: it comes back empty
      await exitOf(child);
      await start();
    },
    async stop() {
      child.kill("SIGKILL");
      await exitOf(child);
    },
  };
}
