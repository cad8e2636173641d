import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { startServer } from "../../src/server.js";
import type { DiagnosisResult } from "../../src/case/diagnosis-result.js";
import type { BenchContext } from "../harness/context.js";
import { benchCase } from "../harness/cases.js";
import { cpuMsSince, mean, percentile, rssSampler } from "../harness/stats.js";
import { fmt, pct, table, type SectionReport } from "../harness/report.js";

export const TARGET_OF_BOUND = 0.9;
const API_KEY = "bench-key";

/** The bench case as a client sends it: JSON, images as base64 `data`, no id. */
function requestBody(i: number): string {
  const c = benchCase(`unused-${i}`);
  return JSON.stringify({ question: c.question, notes: c.notes, options: c.options, patient: c.patient, images: c.images.map((img) => ({ id: img.id, mimeType: img.mimeType, data: img.data, caption: img.caption })) });
}

/**
 * The REST API under load: `startServer` (Fastify, SQLite store with the LangGraph
 * checkpointer, the pipeline) in this process, C clients each posting cases to
 * POST /diagnose one after another (closed loop), L per model call and search.
 */
export async function serverThroughput(ctx: BenchContext): Promise<SectionReport> {
  const started = Date.now();
  const L = ctx.latencyMs;
  await ctx.servers.setLatency(L);
  await ctx.servers.setScenario({ rolloutAnswers: ["A", "A", "B", "A", "C"], identicalReasoning: false });
  const dir = await mkdtemp(path.join(tmpdir(), "medmmv-bench-server-"));
  const cfg = ctx.config({ MEDMMV_API_KEYS: API_KEY, MEDMMV_RATE_LIMIT_PER_MIN: "1000000", MEDMMV_DATA_DIR: dir, HOST: "127.0.0.1", PORT: "0", MEDMMV_CACHE: "off" });
  const server = await startServer(cfg, { handleSignals: false });
  const rows: Array<Array<string | number>> = [];
  const verdicts = [];
  let at64: { throughput: number; bound: number; cpuBound: number; serverCpu: number; childCpu: number } | null = null;
  try {
    const post = async (i: number): Promise<{ ms: number; result: DiagnosisResult }> => {
      const t0 = performance.now();
      const res = await fetch(`${server.address}/diagnose`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${API_KEY}` }, body: requestBody(i) });
      const text = await res.text();
      if (res.status !== 201) throw new Error(`POST /diagnose answered ${res.status}: ${text.slice(0, 300)}`);
      const result = JSON.parse(text) as DiagnosisResult;
      if (result.status !== "completed") throw new Error(`server case ended ${result.status}`);
      return { ms: performance.now() - t0, result };
    };
    // Warm-up, unmeasured: a service runs for hours, and the first cases of a fresh
    // process pay for V8 compiling the hot paths (about 3× the CPU per call, see the
    // overhead section), for the store's first pages and the first connections.
    const warmups = ctx.quick ? 2 : 40;
    let warmSeq = 0;
    await Promise.all(Array.from({ length: 8 }, async () => {
      while (warmSeq < warmups) await post(-1 - warmSeq++);
    }));

    let seq = 0;
    for (const concurrency of [1, 8, 64]) {
      const perClient = ctx.quick ? 1 : concurrency === 1 ? 3 : 2;
      const latencies: number[] = [];
      const chains: number[] = [];
      const rss = rssSampler();
      const serverCpu0 = await ctx.servers.cpuMicros();
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          for (let j = 0; j < perClient; j++) {
            const r = await post(seq++);
            latencies.push(r.ms);
            chains.push(r.result.usage.criticalPathCalls ?? 0);
          }
        }),
      );
      const wall = (performance.now() - t0) / 1000;
      const cpu = cpuMsSince(cpu0);
      const childCpu = ((await ctx.servers.cpuMicros()) - serverCpu0) / 1000;
      const peak = rss.stop();
      const cases = latencies.length;
      const throughput = cases / wall;
      // What the scripted latency allows: every client's case takes exactly L × its chain.
      const bound = concurrency / ((L / 1000) * mean(chains));
      // What the CPUs allow: every core busy with this process's and the scripted servers'
      // work per case — and this process's JavaScript runs on one thread, so at most one
      // core's worth of its CPU time per second (an upper bound: some of it is GC and I/O threads).
      const cpuBound = Math.min((ctx.cores * 1000) / ((cpu + childCpu) / cases), 1000 / (cpu / cases));
      rows.push([concurrency, cases, fmt(throughput, 2), fmt(bound, 2), `**${pct(throughput / bound, 1)}**`, fmt(cpuBound, 2), fmt(percentile(latencies, 50), 0), fmt(percentile(latencies, 99), 0), fmt(L * mean(chains), 0), fmt(cpu / cases, 0), fmt(childCpu / cases, 0), fmt(peak / 2 ** 20, 0)]);
      ctx.log(`server: ${concurrency} concurrent: ${throughput.toFixed(2)} cases/s (bound ${bound.toFixed(2)}), p50 ${percentile(latencies, 50).toFixed(0)} ms`);
      if (concurrency === 64) at64 = { throughput, bound, cpuBound, serverCpu: cpu / cases, childCpu: childCpu / cases };
      if (concurrency === 64) verdicts.push({ target: `server throughput at 64 concurrent cases ≥ ${pct(TARGET_OF_BOUND)} of the latency bound`, measured: `${fmt(throughput, 2)} cases/s = ${pct(throughput / bound, 1)} of ${fmt(bound, 1)} (CPU bound ${fmt(cpuBound, 1)})`, met: throughput / bound >= TARGET_OF_BOUND });
    }
  } finally {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  }
  const body = [
    `\`startServer(config)\` from src/server.ts in the benchmark process (Fastify, API-key auth, SQLite store under a temporary directory with the LangGraph checkpointer, the response cache off), called over HTTP: C clients, each posting the bench case (long, one image, k = 5 distinct rollout paths, no repairs, 8 search pairs) to \`POST /diagnose\` and waiting for the 201 with the result, then posting the next. L = ${L} ms per model call and search; MEDMMV_MAX_CONCURRENCY = 1024, so the limiter never binds. ${ctx.quick ? 2 : 40} unmeasured warm-up cases first (8 at a time).`,
    "",
    table(["concurrent cases", "cases", "cases/s", "latency bound cases/s", "of bound", "CPU bound cases/s", "p50 ms", "p99 ms", "L × chain ms", "server CPU ms/case", "scripted CPU ms/case", "peak RSS MiB"], rows),
    "",
    `- **latency bound** = C ÷ (L × mean critical path of the cases served): the rate if every case took exactly its chain of dependent calls.`,
    `- **CPU bound** = the smaller of ${ctx.cores} cores ÷ CPU per case (this process — server, pipeline and the load-generating client — plus the scripted servers' child process, all on this machine's cores) and 1 core ÷ this process's CPU per case (its JavaScript runs on one thread). When it is below the latency bound, CPU, not the pipeline's structure, caps the throughput.`,
    `- **peak RSS** is this process (the server and the load generator), sampled every 20 ms.`,
    ...(at64 ? ["", readingAt64(at64, ctx.cores)] : []),
  ].join("\n");
  return { id: "server-throughput", title: "Server throughput and latency", command: `npm run bench -- --only server-throughput${ctx.argsNote}`, body, verdicts, seconds: (Date.now() - started) / 1000 };
}

/** What the 64-client row means on this machine: which bound binds, and what meeting the target would take. */
function readingAt64(r: { throughput: number; bound: number; cpuBound: number; serverCpu: number; childCpu: number }, cores: number): string {
  const need = TARGET_OF_BOUND * r.bound;
  const budget = 1000 / need;
  return `Reading: at 64 concurrent cases the server ran at ${fmt(r.throughput, 1)} cases/s, ${pct(r.throughput / r.cpuBound, 0)} of the CPU bound (${fmt(r.cpuBound, 1)}) and ${pct(r.throughput / r.bound, 1)} of the latency bound (${fmt(r.bound, 1)}). ${r.cpuBound < need ? `CPU binds: ${pct(TARGET_OF_BOUND)} of the latency bound is ${fmt(need, 1)} cases/s, which leaves ${fmt(budget, 0)} ms of the server's single JavaScript thread per case, against the ${fmt(r.serverCpu, 0)} ms it used (the pipeline's own share is in the overhead section); with the scripted servers' ${fmt(r.childCpu, 0)} ms per case on the same ${cores} cores, even a server spread over both cores would top out near ${fmt((cores * 1000) / (r.serverCpu + r.childCpu), 0)} cases/s. On this machine the target cannot be met; the figure that says whether the service wastes anything is the share of the CPU bound.` : "The latency bound binds, not the CPU."}`;
}
