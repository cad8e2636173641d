/**
 * Shared by the load and soak runs: the server under test as a child process (started the
 * way `npm start` starts it, through tsx, plus a GC probe), free memory, percentiles, and the JSON artefacts `npm run reliability` turns into RELIABILITY.md.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { freemem } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const RELIABILITY_DIR = path.join(ROOT, "test-artifacts", "reliability");
export const API_KEY = "load-test-key-0123456789abcdefghijk";

export function freeMemoryGiB(): number {
  return Math.round((freemem() / 2 ** 30) * 10) / 10;
}

/** Nearest-rank percentile of an ascending-sorted array. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1]!;
}

export function latencySummary(samplesMs: readonly number[]): { p50: number; p90: number; p99: number; max: number; mean: number } {
  const s = [...samplesMs].sort((a, b) => a - b);
  const round = (x: number) => Math.round(x * 10) / 10;
  return {
    p50: round(percentile(s, 50)),
    p90: round(percentile(s, 90)),
    p99: round(percentile(s, 99)),
    max: round(s.at(-1) ?? 0),
    mean: round(s.reduce((a, b) => a + b, 0) / Math.max(1, s.length)),
  };
}

export function writeArtifact(name: string, value: unknown): string {
  mkdirSync(RELIABILITY_DIR, { recursive: true });
  const file = path.join(RELIABILITY_DIR, `${name}.json`);
  writeFileSync(file, JSON.stringify(value, null, 2) + "\n");
  return file;
}

export interface HeapProbe {
  heapUsed: number;
  heapTotal: number;
  rss: number;
  external: number;
}

export interface ServerChild {
  address: string;
  child: ChildProcess;
  /** Force two GCs in the server and read its heap (needs the GC probe preload). */
  probeHeap(): Promise<HeapProbe>;
  /** Peak resident set size of the server process so far (Linux VmHWM), in bytes. */
  peakRss(): number | null;
  stop(): Promise<void>;
}

/** Start `src/server/server.ts` through tsx with --expose-gc and the GC probe; resolve when it listens. */
export async function startServerChild(env: Record<string, string>): Promise<ServerChild> {
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([k, v]) => v !== undefined && !/^(OPENAI_|MEDMMV_|TAVILY_|DATABASE_URL$|PORT$|HOST$|NODE_OPTIONS$)/.test(k))) as Record<string, string>;
  const child = spawn(process.execPath, ["--expose-gc", "--import", "tsx", "--import", path.join(ROOT, "load/gc-probe.ts"), path.join(ROOT, "src/server/server.ts")], {
    cwd: ROOT,
    env: { ...inherited, HOST: "127.0.0.1", PORT: "0", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderrTail = "";
  const probeWaiters: Array<(p: HeapProbe) => void> = [];
  let stderrBuf = "";
  child.stderr!.on("data", (chunk: Buffer) => {
    stderrBuf += chunk.toString("utf8");
    let nl: number;
    while ((nl = stderrBuf.indexOf("\n")) >= 0) {
      const line = stderrBuf.slice(0, nl);
      stderrBuf = stderrBuf.slice(nl + 1);
      if (line.startsWith('{"gcProbe"')) {
        const probe = (JSON.parse(line) as { gcProbe: HeapProbe | null }).gcProbe;
        if (probe) probeWaiters.shift()?.(probe);
      } else {
        stderrTail = (stderrTail + line + "\n").slice(-4000);
      }
    }
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const address = await new Promise<string>((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error(`server did not start in 60 s:\n${out}\n${stderrTail}`)), 60_000);
    const onData = (chunk: Buffer): void => {
      out = (out + chunk.toString("utf8")).slice(-20_000);
      const m = /"address":"(http:\/\/[^"]+)"[^\n]*"msg":"medmmv listening"/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    };
    child.stdout!.on("data", onData);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited (${code}) before listening:\n${out}\n${stderrTail}`));
    });
  });
  // Keep draining the log pipe so the server never blocks on a full pipe.
  child.stdout!.resume();
  return {
    address,
    child,
    probeHeap: () =>
      new Promise<HeapProbe>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no GC probe answer:\n${stderrTail}`)), 30_000);
        probeWaiters.push((p) => {
          clearTimeout(timer);
          resolve(p);
        });
        child.kill("SIGUSR2");
      }),
    peakRss: () => {
      try {
        const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"));
        return m ? Number(m[1]) * 1024 : null;
      } catch {
        return null;
      }
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

export function serverEnv(modelBaseUrl: string, dataDir: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    OPENAI_BASE_URL: modelBaseUrl,
    OPENAI_API_KEY: "load-test",
    MEDMMV_MODEL: "scripted-executor",
    MEDMMV_JUDGE_MODEL: "scripted-judge",
    MEDMMV_DATA_DIR: dataDir,
    MEDMMV_API_KEYS: API_KEY,
    // One key drives all the traffic: the per-key limit would be the first thing measured.
    MEDMMV_RATE_LIMIT_PER_MIN: "100000000",
    MEDMMV_LOG_LEVEL: "info",
    ...extra,
  };
}

export function api(base: string, p: string, init: RequestInit & { json?: unknown } = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  headers.set("authorization", `Bearer ${API_KEY}`);
  if (init.json !== undefined) headers.set("content-type", "application/json");
  return fetch(base + p, { ...init, headers, body: init.json !== undefined ? JSON.stringify(init.json) : init.body });
}

export const mib = (bytes: number | null): number | null => (bytes === null ? null : Math.round((bytes / 2 ** 20) * 10) / 10);

/** Flags like `--concurrency 200`, read once at the entry point. */
export function numberFlag(argv: readonly string[], name: string, fallback: number): number {
  const i = argv.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const v = Number(argv[i + 1]);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`--${name} expects a positive number`);
  return v;
}
