/**
 * The server as it ships (`medmmv serve`) in a child process, for tests that must stop it for
 * real (SIGKILL: no shutdown hooks, no flushing; SIGTERM: the graceful path). It runs from the
 * CLI's cached build of the sources (support/bundled-process.ts): the same code as under tsx,
 * started in about a second instead of 5–6 s of transpiling, and the signal reaches the server
 * itself, not a wrapper.
 */
import { SCRIPTED_MODELS } from "../../src/scripted/scripted-config.js";
import { TERMINAL_STATUSES, type CaseStatus } from "../../src/server/store/case-store.js";
import { sharedBundle, startBundledServer, type BundledServer } from "./bundled-process.js";
import { until } from "./until.js";

/** A started server process: its address, its output so far, `kill(signal)` that waits for the exit. */
export type ServerProcess = BundledServer;

export async function spawnServer(env: Record<string, string>, opts: { startTimeoutMs?: number } = {}): Promise<ServerProcess> {
  return startBundledServer(await sharedBundle("server"), env, { startTimeoutMs: opts.startTimeoutMs ?? 45_000 });
}

/** The environment of a server child process pointed at a scripted model, with one API key. */
export function childServerEnv(opts: { openaiBaseUrl: string; dataDir: string; apiKey: string }, overrides: Record<string, string> = {}): Record<string, string> {
  return {
    OPENAI_BASE_URL: opts.openaiBaseUrl,
    OPENAI_API_KEY: "test-key",
    MEDMMV_MODEL: SCRIPTED_MODELS.executor,
    MEDMMV_JUDGE_MODEL: SCRIPTED_MODELS.judge,
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
