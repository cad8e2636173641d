import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CaseEvent } from "../../src/server/store/case-store.js";
import { PostgresStore } from "../../src/server/store/postgres-store.js";
import { sharedBundle, startBundledServer, type Bundle, type BundledServer } from "../support/bundled-process.js";
import { clinicalScenario } from "../../src/scripted/clinical-scenario.js";
import { createPrng } from "../../src/scripted/faults.js";
import { recordReliability, type ReliabilityRow } from "../support/reliability-recorder.js";
import { startScriptedOpenAI, type ScriptedOpenAI } from "../../src/scripted/scripted-openai-server.js";
import { childServerEnv, keyedFetch, waitTerminal } from "../support/server-process.js";
import { chestPain } from "../server/http/http-harness.js";
import { until } from "../support/until.js";
import { startThrowawayPostgres, startThrowawayRedis, type ThrowawayService } from "../support/throwaway-services.js";
import { recordPaidCalls, repaidCalls, type PaidCalls } from "../support/paid-calls.js";
import pg from "pg";
import { FULL_FAULT_TRIALS, faultTrials } from "../support/fault-trials.js";

/**
 * Three replicas on Postgres + Redis (the BullMQ engine), real processes, the scripted model
 * at a realistic latency: SIGKILL to a random replica mid-run (twice in `npm test`, 10 in
 * `npm run reliability`: test/support/fault-trials.ts), one Redis restart without persistence and one Postgres restart, each with 16
 * cases in flight (30 in `npm run reliability`). Every accepted case must finish exactly once (one stored result, one final
 * event), none lost, no call paid twice beyond the checkpoint its case resumed from, and
 * the provider cap must hold at the scripted server — all counted there.
 * Postgres and Redis are the test's own (their own ports), so restarting them disturbs no
 * other suite.
 */
const TRIALS = faultTrials();
const SEED = Number(process.env.MEDMMV_FAULT_SEED ?? 20_251_202) || 20_251_202;
const KEY = "replica-kill-trials-key-0123456789";
const CAP = 8;
// Cases per trial: 30 in `npm run reliability`; 16 in `npm test`, still two per slot of the cap,
// so the provider cap stays saturated and a kill at any of the drawn call counts (20-139 of the
// ~320 calls of a trial) finds calls in flight. Every invariant is checked per case either way;
// the smaller set halves the trials' CPU (three replicas, Postgres and Redis: ~100 s a run).
const CASES = TRIALS >= FULL_FAULT_TRIALS ? 30 : 16;
// A quarter second a call: slow enough that a kill always finds calls in flight, fast enough for 12 trials in minutes.
const LATENCY_MS = 250;
const api = keyedFetch(KEY);
const rows: ReliabilityRow[] = [];
let bundle: Bundle;
let pgService: ThrowawayService;
let redis: ThrowawayService;
let openai: ScriptedOpenAI;
let paid: PaidCalls;
const replicas: BundledServer[] = [];
let trialNo = 0;

function env(): Record<string, string> {
  return childServerEnv(
    { openaiBaseUrl: openai.baseUrl, dataDir: "./unused-with-postgres", apiKey: KEY },
    {
      DATABASE_URL: pgService.url,
      REDIS_URL: redis.url,
      MEDMMV_MAX_CONCURRENCY: String(CAP),
      MEDMMV_ENGINE_LOCK_MS: "1500",
      MEDMMV_RECONCILE_MS: "2000",
      // Kills land at random: one case may be cut off several times, which is not a crash of its own.
      MEDMMV_MAX_RUN_STARTS: "20",
      MEDMMV_RATE_LIMIT_PER_MIN: "1000000",
      MEDMMV_CACHE: "off",
      MEDMMV_LLM_MAX_ATTEMPTS: "8",
    },
  );
}

beforeAll(async () => {
  [bundle, pgService, redis] = await Promise.all([sharedBundle("server"), startThrowawayPostgres(), startThrowawayRedis()]);
  paid = recordPaidCalls(clinicalScenario({ rolloutAnswers: ["B", "B", "A"], repairsNeeded: { A: 1 } }), (req) => /fits (trial \d+ case \d+)\?/.exec(req.text)?.[1] ?? null);
  openai = await startScriptedOpenAI({ scenario: paid.scenario, latencyMs: LATENCY_MS });
  for (let i = 0; i < 3; i++) replicas.push(await startBundledServer(bundle, env()));
}, 120_000);

afterAll(async ({}, suite) => {
  recordReliability("replica-kill-trials", rows, suite);
  for (const r of replicas) await r.kill("SIGKILL");
  await openai?.close();
  await Promise.all([redis?.stop(), pgService?.stop()]);
}, 60_000);

async function submitSpread(n: number, tag: string): Promise<string[]> {
  return Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const base = replicas[i % replicas.length]!.address;
      const res = await api(base, "/diagnose", { method: "POST", json: chestPain({ question: `Which diagnosis fits ${tag} case ${i}?` }), headers: { prefer: "respond-async" } });
      if (res.status !== 202) throw new Error(`POST /diagnose: HTTP ${res.status} ${await res.text()}`);
      return ((await res.json()) as { caseId: string }).caseId;
    }),
  );
}

async function storedFinals(ids: string[]): Promise<Record<string, CaseEvent[]>> {
  const store = new PostgresStore({ connectionString: pgService.url });
  await store.init();
  try {
    const out: Record<string, CaseEvent[]> = {};
    for (const id of ids) out[id] = (await store.listEvents(id)).filter((e) => e.type === "final");
    return out;
  } finally {
    await store.close();
  }
}

/**
 * Per case (by its tag), the time of the last root checkpoint written at or before `at`:
 * where a run interrupted then resumes from. Read after the fault, so that the checkpoints
 * a killed replica wrote just before dying are all there; the later ones (of the runs that
 * resumed) are left out by time.
 */
async function checkpointsAt(ids: readonly string[], at: number): Promise<Map<string, number>> {
  const client = new pg.Client({ connectionString: pgService.url });
  await client.connect();
  try {
    const rows = (await client.query<{ thread_id: string; ts: string }>("SELECT thread_id, checkpoint->>'ts' AS ts FROM checkpoints WHERE checkpoint_ns = '' AND thread_id = ANY($1)", [ids])).rows;
    const out = new Map<string, number>();
    for (const r of rows) {
      const ts = Date.parse(r.ts);
      const tag = `trial ${trialNo} case ${ids.indexOf(r.thread_id)}`;
      if (ts <= at && ts > (out.get(tag) ?? Number.NEGATIVE_INFINITY)) out.set(tag, ts);
    }
    return out;
  } finally {
    await client.end();
  }
}

/**
 * One trial: 30 cases in flight, `fault` once the scripted server has seen `afterCalls` more calls; then every case must finish exactly once.
 * A fault that does more after its moment (a kill, then the replica's restart) returns the moment.
 */
async function trial(kind: string, afterCalls: number, fault: () => Promise<number | void>, faultAt: "before" | "after" = "after"): Promise<void> {
  trialNo++;
  // Every replica alive before the trial: one that died by itself is a finding, shown with its last words.
  for (const r of replicas) {
    if (r.child.exitCode !== null || r.child.signalCode !== null) throw new Error(`a replica died by itself (exit ${r.child.exitCode}, signal ${r.child.signalCode}):\n${r.output().split("\n").slice(-30).join("\n")}`);
  }
  openai.reset();
  paid.reset();
  const ids = await submitSpread(CASES, `trial ${trialNo}`);
  await until(() => (openai.stats().total >= afterCalls ? true : undefined), 60_000, `${afterCalls} model calls`);
  const cutAt = openai.stats().total;
  // The fault's moment: a kill is over when the process has exited; a restart of Postgres or
  // Redis begins when it is asked for (runs go on writing checkpoints until it bites).
  let at = Date.now();
  const moment = await fault();
  if (faultAt === "after") at = moment ?? Date.now();
  const resumedFrom = await checkpointsAt(ids, at);
  const views = await waitTerminal(api, replicas[0]!.address, ids, 60_000).catch(async (err: unknown) => {
    // What the replicas complained about, to tell a lost case from a slow one.
    const warnings = replicas.flatMap((r) => r.output().split("\n").filter((l) => /"level":(40|50|60)/.test(l)).slice(-15));
    const store = new PostgresStore({ connectionString: pgService.url });
    await store.init();
    const left = (await store.listUnfinished()).map((c) => `${c.id} ${c.status}`);
    await store.close();
    const st = openai.stats();
    throw new Error(`${String(err)}\nmodel calls: ${cutAt} at the fault, ${st.total} now, ${st.inFlight} in flight\nunfinished: ${left.join(", ")}\nreplica warnings:\n${warnings.join("\n")}`);
  });
  const stats = openai.stats();
  const finals = await storedFinals(ids);
  expect(views.map((v) => v.status), "every case completed").toEqual(ids.map(() => "completed"));
  for (const id of ids) expect(finals[id], `final events of ${id}`).toHaveLength(1);
  expect(stats.peakInFlight, "calls in flight at the provider").toBeLessThanOrEqual(CAP);
  const repaid = repaidCalls(paid.calls, resumedFrom);
  expect(repaid.beyondCheckpoint, "calls paid twice for work a checkpoint already held").toEqual([]);
  // Every case made the same calls once each (the scenario is the same for all): a resumed
  // case neither skipped a step nor made one its checkpoint did not need.
  expect(new Set(ids.map((_, i) => repaid.distinctByCase.get(`trial ${trialNo} case ${i}`))).size, "distinct calls per case").toBe(1);
  rows.push({
    suite: "replica-kill-trials",
    scenario: `3 replicas on Postgres + Redis (BullMQ), ${CASES} cases in flight, provider cap ${CAP}: ${kind} after ${cutAt} calls`,
    trials: 1,
    outcome: `all ${CASES} cases completed, one final event each; ${paid.calls.length} calls paid, ${repaid.repaid} of them twice (each from a step no checkpoint held yet); peak ${stats.peakInFlight} calls in flight at the scripted server (cap ${CAP})`,
    itemsLost: 0,
  });
}

describe("three replicas on Postgres + Redis, faults mid-run", () => {
  const random = createPrng(SEED);
  for (let t = 0; t < TRIALS; t++) {
    it(`trial ${t + 1}: SIGKILL to a random replica mid-run; every case finishes exactly once, the cap holds`, async () => {
      const victim = Math.floor(random() * replicas.length);
      const afterCalls = 20 + Math.floor(random() * 120);
      await trial(`SIGKILL to replica ${victim + 1}`, afterCalls, async () => {
        await replicas[victim]!.kill("SIGKILL");
        // The kill's moment is its exit, not the end of the restart: a restart slower than the job
        // lock (1.5 s; a loaded machine) lets the peers take the dead replica's cases over first, and
        // the checkpoints they then write are after the resume, not what it resumed from.
        const killedAt = Date.now();
        replicas[victim] = await startBundledServer(bundle, env());
        return killedAt;
      });
    }, 180_000);
  }

  it("Redis restarted without persistence mid-run: the reconciler queues the cases again; each finishes exactly once", async () => {
    await trial("Redis SIGKILLed and restarted empty", 60, () => redis.restart(), "before");
  }, 180_000);

  it("Postgres restarted mid-run: every case finishes exactly once", async () => {
    await trial("Postgres fast shutdown and restart", 60, () => pgService.restart(), "before");
  }, 180_000);
});
