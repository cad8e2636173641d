import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
/** The CLI as a user runs it (`medmmv …` is this file through npm's bin link). */
export const MEDMMV_BIN = path.join(ROOT, "bin", "medmmv.js");

/**
 * Run `medmmv ARGS` once and wait for it: its exit code and stderr. bin/medmmv.js builds its
 * bundle of the sources on the first run after they change; a section calls this once before
 * it times anything, so what it measures is every later run, as a user meets it.
 */
export function runMedmmv(args: string[], env: Record<string, string> = { PATH: process.env.PATH ?? "" }): Promise<{ code: number | null; stderr: string; ms: number }> {
  return runNode([MEDMMV_BIN, ...args], env);
}

/** `node ARGV` from spawn to exit, output discarded but the tail of stderr kept. */
export function runNode(argv: string[], env: Record<string, string> = { PATH: process.env.PATH ?? "" }): Promise<{ code: number | null; stderr: string; ms: number }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, argv, { cwd: ROOT, env, stdio: ["ignore", "ignore", "pipe"] });
    let err = "";
    child.stderr.on("data", (d: Buffer) => (err = (err + d.toString()).slice(-4000)));
    child.on("error", reject);
    child.on("exit", (code) => resolve({ code, stderr: err, ms: performance.now() - t0 }));
  });
}

/** How long a stopped server may take to exit before the benchmark kills it and fails. */
const STOP_GRACE_MS = 30_000;

/**
 * `medmmv serve` from spawn to its "medmmv listening" log line, on a fresh data directory (the
 * embedded store, no Redis), then stopped with SIGTERM and waited for.
 */
export async function serveStartMs(env: Record<string, string>): Promise<number> {
  const dataDir = await mkdtemp(path.join(tmpdir(), "medmmv-bench-serve-"));
  try {
    return await new Promise<number>((resolve, reject) => {
      const t0 = performance.now();
      const child = spawn(process.execPath, [MEDMMV_BIN, "serve"], {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? "", ...env, MEDMMV_DATA_DIR: dataDir, HOST: "127.0.0.1", PORT: "0" },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let out = "";
      let err = "";
      let listeningMs: number | null = null;
      let stopGuard: NodeJS.Timeout | undefined;
      let stuck = false;
      child.stdout.on("data", (d: Buffer) => {
        if (listeningMs !== null) return;
        out += d.toString();
        if (!out.includes('"medmmv listening"')) return;
        listeningMs = performance.now() - t0;
        child.kill("SIGTERM");
        // A server that ignores SIGTERM would hang the benchmark: it is killed, and the run fails saying so.
        stopGuard = setTimeout(() => {
          stuck = true;
          child.kill("SIGKILL");
        }, STOP_GRACE_MS);
      });
      child.stderr.on("data", (d: Buffer) => (err = (err + d.toString()).slice(-4000)));
      child.on("error", reject);
      child.on("exit", (code) => {
        clearTimeout(stopGuard);
        if (listeningMs === null) reject(new Error(`medmmv serve exited ${code} before listening: ${err}`));
        else if (stuck) reject(new Error(`medmmv serve did not stop within ${STOP_GRACE_MS} ms of SIGTERM: ${err}`));
        else resolve(listeningMs);
      });
    });
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}
