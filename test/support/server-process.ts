/**
 * `src/server/server.ts` in a child process, for tests that must kill the server for real
 * (SIGKILL: no shutdown hooks, no flushing). Node runs the TypeScript through tsx's
 * loader in the same process, so the signal reaches the server itself, not a wrapper.
 */
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { TERMINAL_STATUSES, type CaseStatus } from "../../src/server/store/case-store.js";
import { until } from "./until.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

export interface ServerProcess {
  /** e.g. http://127.0.0.1:41234 */
  address: string;
  child: ChildProcess;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  /** Send a signal and wait for the process to exit. */
  kill(signal: NodeJS.Signals): Promise<void>;
}

/** Variables from the test runner's environment that would change the child's behaviour. */
const INHERITED_BLOCKLIST = /^(OPENAI_|MEDMMV_|TAVILY_|DATABASE_URL$|PORT$|HOST$)/;

export async function spawnServer(env: Record<string, string>, opts: { startTimeoutMs?: number } = {}): Promise<ServerProcess> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k, v]) => v !== undefined && !INHERITED_BLOCKLIST.test(k))) as Record<string, string>;
  const child = spawn(process.execPath, ["--import", "tsx", path.join(ROOT, "src/server/server.ts")], {
    cwd: ROOT,
    env: { ...base, HOST: "127.0.0.1", PORT: "0", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const address = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start within ${opts.startTimeoutMs ?? 45_000} ms:\n${out}`)), opts.startTimeoutMs ?? 45_000);
    const onData = (chunk: Buffer) => {
      out += chunk.toString("utf8");
      for (const line of out.split("\n")) {
        if (!line.startsWith("{")) continue;
        try {
          const rec = JSON.parse(line) as { msg?: string; address?: string };
          if (rec.msg === "medmmv listening" && rec.address) {
            clearTimeout(timer);
            resolve(rec.address);
            return;
          }
        } catch {
          // a partial line; wait for the rest
        }
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", (c: Buffer) => (out += c.toString("utf8")));
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with code ${code} before listening:\n${out}`));
    });
  });
  return {
    address,
    child,
    output: () => out,
    async kill(signal) {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}

/** The environment of a server child process pointed at a scripted model, with one API key. */
export function childServerEnv(opts: { openaiBaseUrl: string; dataDir: string; apiKey: string }, overrides: Record<string, string> = {}): Record<string, string> {
  return {
    OPENAI_BASE_URL: opts.openaiBaseUrl,
    OPENAI_API_KEY: "test-key",
    MEDMMV_MODEL: "scripted-executor",
    MEDMMV_JUDGE_MODEL: "scripted-judge",
    MEDMMV_DATA_DIR: opts.dataDir,
    MEDMMV_API_KEYS: opts.apiKey,
    MEDMMV_K: "3",
    MEDMMV_LLM_BACKOFF_BASE_MS: "20",
    MEDMMV_LLM_TIMEOUT_MS: "90000",
    MEDMMV_LOG_LEVEL: "info",
    ...overrides,
  };
}

/** fetch against a server with a bearer key; `json` sets the body and its content type. */
export function keyedFetch(apiKey: string) {
  return (base: string, p: string, init: RequestInit & { json?: unknown } = {}): Promise<Response> => {
    const headers = new Headers(init.headers);
    headers.set("authorization", `Bearer ${apiKey}`);
    if (init.json !== undefined) headers.set("content-type", "application/json");
    return fetch(base + p, { ...init, headers, body: init.json !== undefined ? JSON.stringify(init.json) : init.body });
  };
}

type KeyedFetch = ReturnType<typeof keyedFetch>;

/** POST each case with `Prefer: respond-async`; the ids the server gave them, in order. */
export async function submitAsync(api: KeyedFetch, base: string, cases: readonly unknown[]): Promise<string[]> {
  const ids: string[] = [];
  for (const c of cases) {
    const res = await api(base, "/diagnose", { method: "POST", json: c, headers: { prefer: "respond-async" } });
    if (res.status !== 202) throw new Error(`POST /diagnose: HTTP ${res.status} ${await res.text()}`);
    ids.push(((await res.json()) as { caseId: string }).caseId);
  }
  return ids;
}

export interface CaseView {
  caseId: string;
  status: CaseStatus;
  result: unknown;
}

/**
 * Poll GET /cases/{id} until every case is terminal. An HTTP error fails at once; a
 * connection reset (a server process that was just killed) is asked again, as a client would.
 */
export async function waitTerminal(api: KeyedFetch, base: string, ids: readonly string[], ms: number): Promise<CaseView[]> {
  return until(async () => {
    const views = await Promise.all(
      ids.map(async (id) => {
        const res = await api(base, `/cases/${id}`).catch(() => null);
        if (!res) return null;
        if (res.status !== 200) throw new Error(`GET /cases/${id}: HTTP ${res.status} ${await res.text()}`);
        return (await res.json()) as CaseView;
      }),
    );
    return views.every((v) => v !== null && TERMINAL_STATUSES.includes(v.status)) ? (views as CaseView[]) : undefined;
  }, ms, `cases ${ids.join(", ")} to finish`);
}
