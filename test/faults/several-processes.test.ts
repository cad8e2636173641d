import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ClinicalCase } from "../../src/core/contracts/clinical-case.js";
import type { CaseEvent } from "../../src/server/store/case-store.js";
import { SqliteStore } from "../../src/server/store/sqlite-store.js";
import { sharedBundle, spawnBundle, startBundledServer, type Bundle, type BundledServer } from "../support/bundled-process.js";
import { clinicalScenario } from "../../src/scripted/clinical-scenario.js";
import { recordReliability, type ReliabilityRow } from "../support/reliability-recorder.js";
import { startScriptedOpenAI, type ScriptedOpenAI } from "../../src/scripted/scripted-openai-server.js";
import { childServerEnv, keyedFetch, submitAsync, waitTerminal } from "../support/server-process.js";
import { chestPain } from "../server/http/http-harness.js";
import { until } from "../support/until.js";
import { TEST_REDIS_URL, redisPrefix } from "../support/redis-prefix.js";

/**
 * Several server processes on one store (here one SQLite file) and one Redis (the BullMQ
 * case engine): each case is run by one process at a time (BullMQ's job lock), a dead
 * process's cases go to a live one once their locks lapse and resume from their checkpoints,
 * and an event stream opened on one process follows a case another process runs.
 */
const KEY = "several-processes-key-0123456789ab";
const LOCK_MS = 1_500;
const LATENCY_MS = 150;
const api = keyedFetch(KEY);
const rows: ReliabilityRow[] = [];
let bundle: Bundle;
let cliBundle: Bundle;
const scratch: string[] = [];

beforeAll(async () => {
  [bundle, cliBundle] = await Promise.all([sharedBundle("server"), sharedBundle("cli")]);
});
afterAll(async ({}, suite) => {
  recordReliability("several-processes", rows, suite);
  await Promise.all(scratch.map((d) => rm(d, { recursive: true, force: true })));
});

/** The JSON log lines a process wrote so far. */
function logLines(output: string): Array<Record<string, unknown>> {
  return output
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .flatMap((l) => {
      try {
        return [JSON.parse(l) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
}

async function tempDir(): Promise<string> {
  const d = await mkdtemp(path.join(tmpdir(), "medmmv-several-"));
  scratch.push(d);
  return d;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Every case is running and has recorded work (so a kill now leaves it unfinished, mid-case). */
async function untilRunning(base: string, ids: string[]): Promise<void> {
  for (const id of ids) {
    await until(async () => {
      const v = (await (await api(base, `/cases/${id}`)).json()) as { status: string; progress: { done: number } | null };
      return v.status === "running" && (v.progress?.done ?? 0) >= 1 ? true : undefined;
    }, 20_000, `case ${id} to be running`);
  }
}

function cases(): ClinicalCase[] {
  return [
    chestPain(),
    chestPain({ question: "Which diagnosis best explains these findings?" }),
    chestPain({ question: "What is the most likely cause of this presentation?", notes: "A 64-year-old woman has had pressure-like chest pain for two hours, with sweating. ECG shows ST elevation in leads II, III and aVF." }),
  ];
}

/** One Redis key prefix per store directory: the processes of one test share it, tests never do. */
const prefixes = new Map<string, string>();

function env(openai: ScriptedOpenAI, dataDir: string, extra: Record<string, string> = {}): Record<string, string> {
  if (!prefixes.has(dataDir)) prefixes.set(dataDir, redisPrefix("several"));
  return childServerEnv(
    { openaiBaseUrl: openai.baseUrl, dataDir, apiKey: KEY },
    {
      REDIS_URL: TEST_REDIS_URL,
      MEDMMV_REDIS_PREFIX: prefixes.get(dataDir)!,
      MEDMMV_ENGINE_LOCK_MS: String(LOCK_MS),
      MEDMMV_RECONCILE_MS: "2000",
      MEDMMV_MAX_RUN_STARTS: "5",
      MEDMMV_RATE_LIMIT_PER_MIN: "100000",
      MEDMMV_CACHE: "deterministic",
      ...extra,
    },
  );
}

/** Each case's stored events (read from the file after the servers are gone). */
async function storedEvents(dataDir: string, ids: string[]): Promise<Record<string, CaseEvent[]>> {
  const store = new SqliteStore({ dataDir });
  await store.init();
  try {
    const out: Record<string, CaseEvent[]> = {};
    for (const id of ids) out[id] = await store.listEvents(id);
    return out;
  } finally {
    await store.close();
  }
}

const resumedRuns = (events: CaseEvent[]) => events.filter((e) => e.type === "status" && e.data.resumed === true).length;
const finals = (events: CaseEvent[]) => events.filter((e) => e.type === "final").length;

/** Read an SSE stream until its `final` event (or the time limit); returns the events' ids and types. */
async function readStream(base: string, id: string, ms: number): Promise<Array<{ id: number; type: string }>> {
  const res = await api(base, `/cases/${id}/events`);
  expect(res.status).toBe(200);
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  const deadline = Date.now() + ms;
  while (Date.now() < deadline && !/\nevent: final\n/.test(text)) {
    const chunk = await Promise.race([reader.read(), sleep(deadline - Date.now()).then(() => null)]);
    if (!chunk || chunk.done) break;
    text += decoder.decode(chunk.value, { stream: true });
  }
  await reader.cancel().catch(() => undefined);
  return [...text.matchAll(/^id: (\d+)\nevent: ([\w-]+)$/gm)].map((m) => ({ id: Number(m[1]), type: m[2]! }));
}

describe("several server processes on one store", () => {
  it("a process that dies mid-case: a peer takes its cases once their job locks lapse, and finishes each exactly once", async () => {
    const openai = await startScriptedOpenAI({ scenario: clinicalScenario({ rolloutAnswers: ["B", "B", "A"], repairsNeeded: { A: 1 } }), latencyMs: LATENCY_MS });
    const dir = await tempDir();
    const servers: BundledServer[] = [];
    try {
      servers.push(...(await Promise.all([0, 1].map(() => startBundledServer(bundle, env(openai, dir))))));
      const ids = await submitAsync(api, servers[0]!.address, cases());
      await untilRunning(servers[0]!.address, ids);
      // The process running the first case dies; the other takes what it ran.
      const runBy = await until(() => {
        const by = new Map<string, BundledServer>();
        for (const s of servers) for (const l of logLines(s.output())) if (l.msg === "case run started") by.set(l.caseId as string, s);
        return ids.every((id) => by.has(id)) ? by : undefined;
      }, 20_000, "the cases to start");
      const a = runBy.get(ids[0]!)!;
      const b = servers.find((s) => s !== a)!;
      // An event stream opened on B for a case A runs: its events reach B through Redis.
      const stream = readStream(b.address, ids[0]!, 40_000);
      const killedAt = Date.now();
      await a.kill("SIGKILL");

      const views = await waitTerminal(api, b.address, ids, 40_000);
      const adoptedAfterMs = Date.now() - killedAt;
      expect(views.map((v) => v.status)).toEqual(["completed", "completed", "completed"]);
      const seen = await stream;
      expect(seen.at(-1)?.type).toBe("final");
      for (let i = 1; i < seen.length; i++) expect(seen[i]!.id).toBeGreaterThan(seen[i - 1]!.id);
      expect(b.output()).toContain("resuming a case from its checkpoint");
      await b.kill("SIGTERM");

      const events = await storedEvents(dir, ids);
      for (const id of ids) {
        expect(finals(events[id]!), `final events of ${id}`).toBe(1);
        // Each unfinished case was resumed by one process, once.
        expect(resumedRuns(events[id]!), `resumed runs of ${id}`).toBeLessThanOrEqual(1);
      }
      expect(ids.some((id) => resumedRuns(events[id]!) === 1)).toBe(true);
      rows.push({
        suite: "several-processes",
        scenario: `2 server processes on one SQLite file and Redis (BullMQ); the one running ${ids.length} cases is SIGKILLed; job lock ${LOCK_MS} ms`,
        trials: 1,
        outcome: `the peer took the unfinished cases once their locks lapsed and finished each exactly once (one final event, at most one resumed run each), ${Math.round(adoptedAfterMs / 100) / 10} s after the kill; its event stream for one of them (through Redis) ran to the final event`,
        itemsLost: 0,
      });
    } finally {
      for (const s of servers) await s.kill("SIGKILL");
      await openai.close();
    }
  }, 120_000);

  it("processes starting together on unfinished cases: each case is resumed by exactly one of them", async () => {
    const openai = await startScriptedOpenAI({ scenario: clinicalScenario({ rolloutAnswers: ["B", "B", "A"] }), latencyMs: LATENCY_MS });
    const dir = await tempDir();
    const servers: BundledServer[] = [];
    try {
      const first = await startBundledServer(bundle, env(openai, dir));
      const ids = await submitAsync(api, first.address, cases());
      await untilRunning(first.address, ids);
      await first.kill("SIGKILL");

      // Three processes start at once on the same file; the dead one's cases must each go to one of them.
      servers.push(...(await Promise.all([0, 1, 2].map(() => startBundledServer(bundle, env(openai, dir))))));
      const views = await waitTerminal(api, servers[0]!.address, ids, 40_000);
      expect(views.map((v) => v.status)).toEqual(["completed", "completed", "completed"]);
      for (const s of servers) await s.kill("SIGTERM");

      const events = await storedEvents(dir, ids);
      for (const id of ids) {
        expect(finals(events[id]!), `final events of ${id}`).toBe(1);
        expect(resumedRuns(events[id]!), `resumed runs of ${id}`).toBe(1);
      }
      rows.push({
        suite: "several-processes",
        scenario: `a server SIGKILLed with ${ids.length} cases in flight; 3 processes then start together on the same SQLite file and Redis`,
        trials: 1,
        outcome: "each case resumed by exactly one process (one resumed run, one final event each)",
        itemsLost: 0,
      });
    } finally {
      for (const s of servers) await s.kill("SIGKILL");
      await openai.close();
    }
  }, 120_000);

  it("medmmv serve --workers 2: two processes on one port share the cases; a worker killed mid-case is replaced and its cases finish", async () => {
    const openai = await startScriptedOpenAI({ scenario: clinicalScenario({ rolloutAnswers: ["B", "B", "A"] }), latencyMs: LATENCY_MS });
    const dir = await tempDir();
    // No response cache: every case makes all its calls, so the kill lands while cases run.
    const run = spawnBundle(cliBundle, ["serve", "--workers", "2"], { HOST: "127.0.0.1", PORT: "0", ...env(openai, dir, { MEDMMV_CACHE: "off" }) });
    try {
      const listening = await until(() => {
        const lines = logLines(run.output()).filter((l) => l.msg === "medmmv listening");
        return lines.length >= 2 ? lines : undefined;
      }, 40_000, "two workers listening");
      const address = listening[0]!.address as string;
      expect(listening[1]!.address).toBe(address); // one port for both
      const workerPids = new Set(listening.map((l) => l.pid as number));
      expect(workerPids.size).toBe(2);

      // Posted at once: several connections, which the primary hands to the workers in turn.
      const first = (await Promise.all([submitAsync(api, address, cases()), submitAsync(api, address, cases()), submitAsync(api, address, cases())])).flat();
      await waitTerminal(api, address, first, 40_000);
      const served = new Set(logLines(run.output()).filter((l) => l.msg === "case accepted").map((l) => l.pid as number));
      expect(served.size, "both workers accepted cases").toBe(2);

      // Kill one worker while cases run: the primary starts a replacement, and the cases finish.
      const second = await submitAsync(api, address, cases());
      // The worker whose queue worker runs the first of these cases, once every one of them has
      // started (each takes ≥ 4 × L, so it is still running).
      const runBy = await until(() => {
        const by = new Map(logLines(run.output()).filter((l) => l.msg === "case run started").map((l) => [l.caseId as string, l.pid as number]));
        return second.every((id) => by.has(id)) ? by : undefined;
      }, 20_000, "the cases to start");
      const victim = runBy.get(second[0]!)!;
      expect(workerPids.has(victim)).toBe(true);
      const victimCases = second.filter((id) => runBy.get(id) === victim);
      await untilRunning(address, victimCases);
      process.kill(victim, "SIGKILL");
      const views = await waitTerminal(api, address, second, 40_000);
      expect(views.map((v) => v.status)).toEqual(["completed", "completed", "completed"]);
      expect(run.output()).toContain("worker exited unexpectedly");
      await until(() => (logLines(run.output()).filter((l) => l.msg === "medmmv listening").length >= 3 ? true : undefined), 40_000, "a replacement worker");

      // SIGTERM to the primary: every worker stops gracefully, the primary exits 0.
      const exit = await run.kill("SIGTERM");
      expect(exit.code).toBe(0);
      const events = await storedEvents(dir, [...first, ...second]);
      for (const id of [...first, ...second]) expect(finals(events[id]!), `final events of ${id}`).toBe(1);
      // The killed worker's cases were picked up by another process and resumed there, once.
      for (const id of victimCases) expect(resumedRuns(events[id]!), `resumed runs of ${id}`).toBe(1);
      rows.push({
        suite: "several-processes",
        scenario: "medmmv serve --workers 2 on one SQLite file and Redis; one worker SIGKILLed with 3 cases in flight",
        trials: 1,
        outcome: "both workers accepted cases on one port; the primary replaced the killed worker; every case finished exactly once; SIGTERM stopped all with exit 0",
        itemsLost: 0,
      });
    } finally {
      await run.kill("SIGKILL");
      await openai.close();
    }
  }, 180_000);

  it("medmmv serve --workers 2 without REDIS_URL refuses to start and names it", async () => {
    const dir = await tempDir();
    const run = spawnBundle(cliBundle, ["serve", "--workers", "2"], { HOST: "127.0.0.1", PORT: "0", ...childServerEnv({ openaiBaseUrl: "http://127.0.0.1:9/v1", dataDir: dir, apiKey: KEY }) });
    const exit = await run.exited;
    expect(exit.code).toBe(2);
    expect(run.output()).toMatch(/2 workers need REDIS_URL/);
  }, 60_000);
});
