import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { scriptedChildEnv, type BenchContext } from "../harness/context.js";
import { requestBody, type CaseShape } from "../harness/cases.js";
import { distinctScenario } from "../harness/bench-scenario.js";
import { startReplicaSet, type ReplicaSet } from "../harness/replica-set.js";
import { createRunStores } from "../harness/run-stores.js";
import { asyncClient, type AsyncOutcome } from "../harness/async-cases.js";
import { median, percentile, sum } from "../harness/stats.js";
import { fmt, span, table, type SectionReport, type Verdict } from "../harness/report.js";

const L_MS = 1000;
const API_KEY = "bench-replicas-key-0123456789abcdefghij";
const SHAPE: CaseShape = { length: "short", images: 0 };
/**
 * k = 3: the smallest k at which the rollouts can disagree and the selection still has a
 * majority to weigh, so every stage of the method runs, with the fewest calls per case; the
 * two cap-16 runs are bound by calls ÷ cap × L, so each rollout more lengthens both (the body
 * prints the floor this k gives).
 */
const K = 3;
const QUERY = `?k=${K}&maxRepairs=0`;
/** The documented default of MEDMMV_ENGINE_CONCURRENCY, set explicitly so the body can cite it. */
const ENGINE_CONCURRENCY = 32;

interface RunSpec {
  label: string;
  workers: number;
  cap: number;
}

interface ReplicaRun extends RunSpec {
  outcomes: AsyncOutcome[];
  /** Accept → terminal of each completed case, ms. */
  latencies: number[];
  makespanMs: number;
  /** Model calls the scripted server received during the run. */
  modelCalls: number;
  peakInFlight: number;
  /** Σ usage.llmCalls over the cases' results. */
  resultCalls: number;
  /** Cases each replica finished during the run, largest first. */
  perReplica: number[];
}

/**
 * 200 cases posted at once to one port, on one replica and on three (`medmmv serve --workers N`,
 * real processes on the machine's Postgres and Redis), at L = 1 s per model call and search:
 * latency against one case alone, throughput, and what the provider cap (MEDMMV_MAX_CONCURRENCY,
 * one budget across the replicas through Redis) does to both.
 */
export async function replicas(ctx: BenchContext): Promise<SectionReport> {
  const started = Date.now();
  const cases = ctx.quick ? 20 : 200;
  const aloneCount = ctx.quick ? 1 : 3;
  const specs: RunSpec[] = [
    { label: "1 replica, cap 16", workers: 1, cap: 16 },
    { label: "3 replicas, cap 16", workers: 3, cap: 16 },
    { label: "3 replicas, cap 48", workers: 3, cap: 48 },
  ];
  await ctx.servers.setScenario(distinctScenario());
  const dataDir = await mkdtemp(path.join(tmpdir(), "medmmv-bench-replicas-"));
  let seq = 0;
  const alone: AsyncOutcome[] = [];
  const runs: ReplicaRun[] = [];

  const envFor = (spec: RunSpec, stores: { databaseUrl: string; redisUrl: string; redisPrefix: string }): Record<string, string> => ({
    ...scriptedChildEnv(ctx.servers),
    DATABASE_URL: stores.databaseUrl,
    REDIS_URL: stores.redisUrl,
    MEDMMV_REDIS_PREFIX: stores.redisPrefix,
    MEDMMV_MAX_CONCURRENCY: String(spec.cap),
    MEDMMV_ENGINE_CONCURRENCY: String(ENGINE_CONCURRENCY),
    MEDMMV_API_KEYS: API_KEY,
    // The client is one key posting hundreds of cases and holding one event stream per case.
    MEDMMV_RATE_LIMIT_PER_MIN: "1000000",
    MEDMMV_MAX_EVENT_STREAMS_PER_KEY: "1024",
    MEDMMV_CACHE: "off",
    // A loaded 2-core machine must not turn a 1 s call into a timeout and a retry.
    MEDMMV_LLM_TIMEOUT_MS: "60000",
    MEDMMV_DATA_DIR: dataDir,
  });

  /** n cases posted at once; every one must reach a terminal state before the deadline. */
  const burst = async (set: ReplicaSet, n: number, deadlineMs: number): Promise<AsyncOutcome[]> => {
    const client = asyncClient(set.address, API_KEY, QUERY);
    const deadline = performance.now() + deadlineMs;
    return Promise.all(Array.from({ length: n }, () => client.run(requestBody(seq++, SHAPE), deadline)));
  };
  const calledPerCase = (): number => median(alone.map((o) => o.result?.usage.llmCalls ?? NaN));

  try {
    for (const spec of specs) {
      const stores = await createRunStores(`w${spec.workers}_c${spec.cap}`);
      try {
        ctx.log(`replicas: starting ${spec.label}…`);
        const set = await startReplicaSet(spec.workers, envFor(spec, stores));
        const seqAtStart = seq;
        try {
          // Warm-up at L = 0, unmeasured: fresh processes pay for V8 compiling their first cases,
          // and with several workers each should have run some before it is measured.
          await ctx.servers.setLatency(0);
          await burst(set, 4 * spec.workers, 120_000);
          await ctx.servers.setLatency(L_MS);
          if (alone.length === 0) {
            // The baseline, on the first replica set: one case at a time, nothing else running.
            for (let i = 0; i < aloneCount; i++) alone.push(...(await burst(set, 1, 120_000)));
            const bad = alone.filter((o) => o.status !== "completed");
            if (bad.length > 0) throw new Error(`a case alone ended ${bad[0]!.status}: ${JSON.stringify(bad[0]!.error)}`);
            ctx.log(`replicas: one case alone ${fmt(median(alone.map(latencyOf)), 0)} ms, ${calledPerCase()} model calls`);
          }
          await ctx.servers.reset();
          // The earlier cases' log lines first, so none of them is counted as the run's.
          const finishedBefore = await logSettled(set, seq - seqAtStart);
          // Generous: three times the cap-bound floor the one-case figures predict, plus start-up.
          const floorMs = ((cases * calledPerCase()) / spec.cap) * L_MS;
          const outcomes = await burst(set, cases, 3 * Math.max(floorMs, median(alone.map(latencyOf))) + 120_000);
          const stats = await ctx.servers.stats();
          const finishedAfter = await logSettled(set, seq - seqAtStart);
          const perReplica = [...finishedAfter].map(([pid, n]) => n - (finishedBefore.get(pid) ?? 0)).filter((n) => n > 0).sort((a, b) => b - a);
          const done = outcomes.filter((o) => o.status === "completed");
          const run: ReplicaRun = {
            ...spec,
            outcomes,
            latencies: done.map(latencyOf),
            makespanMs: Math.max(...outcomes.map((o) => o.terminalAt)) - Math.min(...outcomes.map((o) => o.acceptedAt)),
            modelCalls: stats.model.total,
            peakInFlight: stats.model.peakInFlight,
            resultCalls: sum(done.map((o) => o.result?.usage.llmCalls ?? 0)),
            perReplica,
          };
          runs.push(run);
          ctx.log(`replicas: ${spec.label}: ${done.length}/${cases} completed, p50 ${fmt(percentile(run.latencies, 50), 0)} ms, makespan ${fmt(run.makespanMs / 1000, 1)} s, peak in flight ${run.peakInFlight}`);
        } catch (err) {
          throw new Error(`${spec.label}: ${(err as Error).message}\n--- last output of the replicas ---\n${set.outputTail().slice(-3000)}`, { cause: err });
        } finally {
          await set.stop();
        }
      } finally {
        await stores.remove();
      }
    }
  } finally {
    await ctx.servers.setLatency(0);
    await rm(dataDir, { recursive: true, force: true });
  }

  const single = median(alone.map(latencyOf));
  const callsPerCase = calledPerCase();
  const throughput = (r: ReplicaRun): number => r.outcomes.length / (r.makespanMs / 60_000);
  const floorS = (r: ReplicaRun): number => (r.modelCalls / r.cap) * (L_MS / 1000);
  const p50 = (r: ReplicaRun): number => percentile(r.latencies, 50);
  const rows = runs.map((r) => [
    r.label,
    `${r.latencies.length}/${r.outcomes.length}`,
    r.perReplica.join(" / "),
    fmt(p50(r) / 1000, 1),
    fmt(percentile(r.latencies, 99) / 1000, 1),
    fmt(Math.max(...r.latencies) / 1000, 1),
    `**${fmt(p50(r) / single, 2)}**`,
    fmt(percentile(r.latencies, 99) / single, 2),
    `**${fmt(throughput(r), 1)}**`,
    r.modelCalls,
    `${r.peakInFlight} of ${r.cap}`,
    fmt(floorS(r), 1),
    fmt(r.makespanMs / 1000, 1),
    fmt(r.makespanMs / 1000 / floorS(r), 2),
  ]);
  const [one, three, tripled] = runs as [ReplicaRun, ReplicaRun, ReplicaRun];
  const verdicts: Verdict[] = [
    {
      target: `every one of ${cases} cases posted at once completes (1 replica; 3 replicas, one cap; 3 replicas, tripled cap)`,
      measured: runs.map((r) => `${r.latencies.length}/${r.outcomes.length}`).join(", "),
      met: runs.every((r) => r.latencies.length === r.outcomes.length),
    },
    ...runs.map((r) => ({
      target: `${r.label}: model calls in flight at the provider ≤ MEDMMV_MAX_CONCURRENCY = ${r.cap}, counted at the scripted server (one budget across the replicas)`,
      measured: `peak ${r.peakInFlight}`,
      met: r.peakInFlight <= r.cap,
    })),
    {
      target: "model calls the provider received = Σ the cases' usage.llmCalls (no call made twice, no case run twice across replicas)",
      measured: runs.map((r) => `${r.modelCalls} = ${r.resultCalls}`).join(", "),
      met: runs.every((r) => r.modelCalls === r.resultCalls),
    },
  ];
  const acceptS = (r: ReplicaRun): number => (Math.max(...r.outcomes.map((o) => o.acceptedAt)) - Math.min(...r.outcomes.map((o) => o.acceptedAt))) / 1000;
  const body = [
    `The bench's short case (two sentences of notes, no image) at k = ${K} rollouts with distinct reasoning and maxRepairs = 0, the response cache off: ${span(alone.map((o) => o.result?.usage.llmCalls ?? 0))} model calls and ${span(alone.map((o) => o.result?.usage.searchCalls ?? 0))} searches per case. k = ${K} is the smallest k at which the rollouts can disagree and the selection still weighs a majority, so every stage runs, and it keeps each cap-16 run's floor at ${cases} × ${callsPerCase} calls ÷ 16 × L = ${fmt((cases * callsPerCase) / 16 * (L_MS / 1000), 0)} s. Each case is posted as JSON to \`POST /diagnose${QUERY}\` with \`Prefer: respond-async\`, then followed on its event stream until the \`final\` event; latency is accept (the 202) → that event, on the client's clock. The service is \`medmmv serve --workers N\` as an operator starts it (src/cli/main.ts through tsx; node:cluster deals the connections of the one port to the workers), on the machine's Postgres (a database of the run's own, dropped after it) and Redis (a MEDMMV_REDIS_PREFIX of its own, deleted after it), whose BullMQ queue gives each replica up to ${ENGINE_CONCURRENCY} cases at once (MEDMMV_ENGINE_CONCURRENCY); the rest wait in the queue. L = ${L_MS} ms per model call and search at the scripted servers (in their own process). The provider cap MEDMMV_MAX_CONCURRENCY is the model calls in flight across every replica (a Redis semaphore), so three replicas on cap 16 share 16; cap 48 is the provider's allowance tripled. Each replica set had an unmeasured warm-up at L = 0; "one case alone" is the median of ${alone.length} case${alone.length === 1 ? "" : "s"} posted one at a time on the first set: ${fmt(single / 1000, 1)} s.`,
    "",
    table(["run", "completed", "cases per replica", "p50 s", "p99 s", "max s", "p50 ÷ one case alone", "p99 ÷ one case alone", "cases/min", "model calls", "peak in flight", "floor s", "makespan s", "makespan ÷ floor"], rows),
    "",
    `**floor** = model calls ÷ cap × L: no schedule with at most cap calls in flight finishes sooner (nor sooner than one case alone, the chain of calls one case waits for). **makespan** is first accept → last terminal; **cases/min** is the cases over it. **model calls** and **peak in flight** are counted at the scripted server over the run; **cases per replica** from each worker's "case finished" log lines. All ${cases} POSTs were accepted within ${runs.map((r) => fmt(acceptS(r), 1)).join(" / ")} s.`,
    "",
    `On the same cap, three replicas made ${fmt(throughput(three), 1)} cases/min against ${fmt(throughput(one), 1)} on one (${fmt(throughput(three) / throughput(one), 2)}×), at ${fmt(three.makespanMs / 1000 / floorS(three), 2)}× and ${fmt(one.makespanMs / 1000 / floorS(one), 2)}× of the floor their shared cap sets: ${sameCapReading(throughput(three) / throughput(one))}, and the provider saw at most ${three.peakInFlight} calls at once from the three. Tripling the cap on three replicas gave ${fmt(throughput(tripled) / throughput(three), 2)}× the throughput (${fmt(throughput(tripled), 1)} cases/min, ${fmt(tripled.makespanMs / 1000 / floorS(tripled), 2)}× its floor) and a p50 of ${fmt(p50(tripled) / single, 2)}× one case alone instead of ${fmt(p50(three) / single, 2)}×.`,
  ].join("\n");
  return { id: "replicas", title: "Replicas behind one port", command: `npm run bench -- --only replicas${ctx.argsNote}`, body, verdicts, seconds: (Date.now() - started) / 1000 };
}

const latencyOf = (o: AsyncOutcome): number => o.terminalAt - o.acceptedAt;

/** What three replicas against one on the same cap measured, in words (15 %: run-to-run noise here). */
function sameCapReading(ratio: number): string {
  if (ratio >= 1.15) return "three replicas were faster even on the one cap, so one replica alone did not keep the cap busy";
  if (ratio <= 1 / 1.15) return "three replicas were slower on the one cap than one replica";
  return "within 15 % of each other, so while the cap binds, replicas add no throughput";
}
/**
 * The workers' "case finished" counts once they cover every case posted to the set: a worker
 * logs that line just after the final event the client already saw, so the log lags a little.
 * A failed case logs no such line; after 15 s the counts are returned as they are (the column is
 * informative, the completed count and the verdicts come from the API).
 */
async function logSettled(set: ReplicaSet, posted: number): Promise<Map<number, number>> {
  for (let waited = 0; waited < 15_000; waited += 100) {
    const counts = set.casesFinishedByPid();
    if (sum([...counts.values()]) >= posted) return counts;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return set.casesFinishedByPid();
}
