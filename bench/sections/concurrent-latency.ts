import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { startServer } from "../../src/server/server.js";
import type { DiagnosisResult } from "../../src/core/contracts/diagnosis-result.js";
import type { BenchContext } from "../harness/context.js";
import { requestBody } from "../harness/cases.js";
import { distinctScenario } from "../harness/bench-scenario.js";
import { cpuMsSince, median, percentile, sum } from "../harness/stats.js";
import { fmt, pct, span, table, type SectionReport } from "../harness/report.js";

export const TARGET_LATENCY_RATIO = 1.1;
const L_MS = 1000;
const API_KEY = "bench-key-0123456789abcdefghijklmnopq";
/** The provider cap a service runs with unless told otherwise (MEDMMV_MAX_CONCURRENCY). */
const DEFAULT_CAP = 16;

interface LatencyRun {
  label: string;
  cap: number;
  concurrency: number;
  latencies: number[];
  chains: number[];
  /** Model calls of each case. */
  calls: number[];
  /** Search pairs (web-search calls) of each case. */
  searchPairs: number[];
  cpuMs: number;
  wallMs: number;
}

/**
 * What a user of the REST API feels under load: the latency of a case when 64 are posted
 * at once, against the latency of one case alone, at L = 1 s per model call and search.
 * `startServer` in this process (which also sends the requests), SQLite store, API keys.
 */
export async function concurrentLatency(ctx: BenchContext): Promise<SectionReport> {
  const started = Date.now();
  const concurrency = ctx.quick ? 8 : 64;
  await ctx.servers.setScenario(distinctScenario());
  let seq = 0;

  const withServer = async <T>(cap: number, fn: (address: string) => Promise<T>): Promise<T> => {
    const dir = await mkdtemp(path.join(tmpdir(), "medmmv-bench-latency-"));
    const server = await startServer(ctx.config({ MEDMMV_API_KEYS: API_KEY, MEDMMV_RATE_LIMIT_PER_MIN: "1000000", MEDMMV_DATA_DIR: dir, HOST: "127.0.0.1", PORT: "0", MEDMMV_CACHE: "off", MEDMMV_MAX_CONCURRENCY: String(cap) }), { handleSignals: false });
    try {
      return await fn(server.address);
    } finally {
      await server.close();
      await rm(dir, { recursive: true, force: true });
    }
  };
  const post = async (address: string): Promise<{ ms: number; result: DiagnosisResult }> => {
    const t0 = performance.now();
    const res = await fetch(`${address}/diagnose`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${API_KEY}` }, body: requestBody(seq++) });
    const text = await res.text();
    if (res.status !== 201) throw new Error(`POST /diagnose answered ${res.status}: ${text.slice(0, 300)}`);
    const result = JSON.parse(text) as DiagnosisResult;
    if (result.status !== "completed") throw new Error(`server case ended ${result.status}`);
    return { ms: performance.now() - t0, result };
  };
  const measure = async (address: string, label: string, cap: number, n: number, together: boolean): Promise<LatencyRun> => {
    const latencies: number[] = [];
    const chains: number[] = [];
    const calls: number[] = [];
    const searchPairs: number[] = [];
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const one = async () => {
      const r = await post(address);
      latencies.push(r.ms);
      chains.push(r.result.usage.criticalPathCalls ?? 0);
      calls.push(r.result.usage.llmCalls);
      searchPairs.push(r.result.usage.byAgent["web-search"]?.calls ?? 0);
    };
    if (together) await Promise.all(Array.from({ length: n }, one));
    else for (let i = 0; i < n; i++) await one();
    return { label, cap, concurrency: together ? n : 1, latencies, chains, calls, searchPairs, cpuMs: cpuMsSince(cpu0), wallMs: performance.now() - t0 };
  };

  const runs: LatencyRun[] = [];
  await withServer(1024, async (address) => {
    // Warm-up at L = 0, unmeasured: the first cases of a fresh process pay for V8 compiling.
    await ctx.servers.setLatency(0);
    await Promise.all(Array.from({ length: 8 }, async () => { for (let i = 0; i < (ctx.quick ? 1 : 5); i++) await post(address); }));
    await ctx.servers.setLatency(L_MS);
    runs.push(await measure(address, "one case at a time", 1024, ctx.quick ? 1 : 3, false));
    runs.push(await measure(address, `${concurrency} cases at once`, 1024, concurrency, true));
    ctx.log(`latency: single ${median(runs[0]!.latencies).toFixed(0)} ms, ${concurrency} at once p50 ${percentile(runs[1]!.latencies, 50).toFixed(0)} ms`);
  });
  await withServer(DEFAULT_CAP, async (address) => {
    await ctx.servers.setLatency(0);
    await post(address);
    await ctx.servers.setLatency(L_MS);
    runs.push(await measure(address, `${concurrency} cases at once, default cap`, DEFAULT_CAP, concurrency, true));
    ctx.log(`latency: default cap p50 ${percentile(runs[2]!.latencies, 50).toFixed(0)} ms`);
  });
  await ctx.servers.setLatency(0);

  const single = median(runs[0]!.latencies);
  const ratioOf = (r: LatencyRun) => percentile(r.latencies, 50) / single;
  const raised = runs[1]!;
  const capped = runs[2]!;
  const verdicts = [
    { target: `p50 latency of ${concurrency} concurrent cases ÷ one case alone ≤ ${TARGET_LATENCY_RATIO} (L = 1 s, MEDMMV_MAX_CONCURRENCY raised to 1024)`, measured: `${fmt(ratioOf(raised), 2)} (${fmt(percentile(raised.latencies, 50), 0)} ms ÷ ${fmt(single, 0)} ms)`, met: ratioOf(raised) <= TARGET_LATENCY_RATIO },
  ];
  const rows = runs.map((r) => [r.label, r.cap, r.latencies.length, fmt(median(r.chains), 0), fmt(percentile(r.latencies, 50), 0), fmt(percentile(r.latencies, 99), 0), fmt(Math.max(...r.latencies), 0), `**${fmt(ratioOf(r), 2)}**`, pct(r.cpuMs / r.wallMs, 0)]);
  const body = [
    `The bench case (long, one image, k = 5 distinct rollout paths, no repairs, ${span(runs.flatMap((r) => r.searchPairs))} search pairs) posted as JSON to \`POST /diagnose\` (synchronous: the client waits for the 201 with the result) of \`startServer\` in the benchmark process, with API-key auth, the SQLite store and checkpointer in a temporary directory and the response cache off. L = ${L_MS} ms per model call and search. First one case at a time, then ${concurrency} posted at once; both with MEDMMV_MAX_CONCURRENCY = 1024, so the provider cap does not bind and the figure measures the service. Then ${concurrency} at once on a fresh server with the default cap of ${DEFAULT_CAP} model calls in flight per process, as a service runs unless configured: there the cases queue for the provider by design, and the ratio shows what the cap costs.`,
    "",
    table(["run", "MEDMMV_MAX_CONCURRENCY", "cases", "chain", "p50 ms", "p99 ms", "max ms", "p50 ÷ one case alone", "process CPU ÷ wall"], rows),
    "",
    `"process CPU ÷ wall" is this process's CPU (server and load generator) over the run's wall time: ${pct(raised.cpuMs / raised.wallMs, 0)} of one core with ${concurrency} cases at once and the cap raised. With the default cap the p50 was ${fmt(ratioOf(capped), 2)}× one case alone: the ${capped.latencies.length} cases made ${sum(capped.calls)} model calls, at most ${DEFAULT_CAP} in flight, so the last of them could not finish before ${fmt((sum(capped.calls) / DEFAULT_CAP) * (L_MS / 1000), 0)} s (measured: ${fmt(Math.max(...capped.latencies) / 1000, 0)} s).`,
  ].join("\n");
  return { id: "concurrent-latency", title: "Latency under concurrent load", command: `npm run bench -- --only concurrent-latency${ctx.argsNote}`, body, verdicts, seconds: (Date.now() - started) / 1000 };
}
