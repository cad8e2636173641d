import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startServer } from "../../src/server.js";
import type { DiagnosisResult } from "../../src/case/diagnosis-result.js";
import type { BenchContext } from "../harness/context.js";
import { benchCase } from "../harness/cases.js";
import { cpuMsSince, mean, percentile, rssSampler } from "../harness/stats.js";
import { fmt, pct, table, type SectionReport } from "../harness/report.js";

export const TARGET_OF_BOUND = 0.9;
const API_KEY = "bench-key";
const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const WORKERS = 2;

/** The bench case as a client sends it: JSON, images as base64 `data`, no id. */
function requestBody(i: number): string {
  const c = benchCase(`unused-${i}`);
  return JSON.stringify({ question: c.question, notes: c.notes, options: c.options, patient: c.patient, images: c.images.map((img) => ({ id: img.id, mimeType: img.mimeType, data: img.data, caption: img.caption })) });
}

/** A server under test: where it listens and how much CPU its processes have used so far. */
interface ServerUnderTest {
  label: string;
  address: string;
  /** CPU ms of the server's processes so far; for the in-process server, of this whole process. */
  cpuMs(): number;
  /** Its JavaScript threads: how many cores of JavaScript it can use at most. */
  threads: number;
  close(): Promise<void>;
}

/** CPU (user + system) of a process from /proc, in ms (Linux; USER_HZ is 100 on x86-64 and arm64). */
function procCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** `medmmv serve --workers N` as an operator runs it (the CLI through tsx), on its own SQLite file. */
async function startWorkers(env: Record<string, string>, workers: number): Promise<ServerUnderTest> {
  const child: ChildProcess = spawn(process.execPath, [...process.execArgv, path.join(ROOT, "src", "cli", "main.ts"), "serve", "--workers", String(workers)], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", ...env, MEDMMV_LOG_LEVEL: "info" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  const deadline = Date.now() + 60_000;
  let listening: Array<{ address: string; pid: number }> = [];
  while (listening.length < workers) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`medmmv serve --workers ${workers} did not start:\n${out.slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 100));
    listening = out
      .split("\n")
      .filter((l) => l.includes('"medmmv listening"'))
      .map((l) => JSON.parse(l) as { address: string; pid: number });
  }
  const pids = [child.pid!, ...listening.map((l) => l.pid)];
  return {
    label: `\`medmmv serve --workers ${workers}\` (${workers} child processes)`,
    address: listening[0]!.address,
    cpuMs: () => pids.reduce((n, pid) => n + procCpuMs(pid), 0),
    threads: workers,
    async close() {
      child.kill("SIGTERM");
      await exited;
    },
  };
}

interface LoadRow {
  concurrency: number;
  cases: number;
  throughput: number;
  bound: number;
  cpuBound: number;
  p50: number;
  p99: number;
  chainMs: number;
  serverCpu: number;
  loadCpu: number;
  childCpu: number;
  peakRssMiB: number | null;
}

/**
 * The REST API under load, in two set-ups: `startServer` in this process (one process,
 * one JavaScript thread), then `medmmv serve --workers 2` (two server processes on one
 * port and one store). C clients each post cases to POST /diagnose one after another
 * (closed loop), L per model call and search.
 */
export async function serverThroughput(ctx: BenchContext): Promise<SectionReport> {
  const started = Date.now();
  const L = ctx.latencyMs;
  await ctx.servers.setLatency(L);
  await ctx.servers.setScenario({ rolloutAnswers: ["A", "A", "B", "A", "C"], identicalReasoning: false });
  const envFor = (dir: string) => ({ MEDMMV_API_KEYS: API_KEY, MEDMMV_RATE_LIMIT_PER_MIN: "1000000", MEDMMV_DATA_DIR: dir, HOST: "127.0.0.1", PORT: "0", MEDMMV_CACHE: "off" });
  const warmups = ctx.quick ? 2 : 40;
  const sections: Array<{ server: string; rows: LoadRow[] }> = [];
  const verdicts = [];
  let seq = 0;

  const measure = async (sut: ServerUnderTest, concurrencies: number[]): Promise<LoadRow[]> => {
    const post = async (i: number): Promise<{ ms: number; result: DiagnosisResult }> => {
      const t0 = performance.now();
      const res = await fetch(`${sut.address}/diagnose`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${API_KEY}` }, body: requestBody(i) });
      const text = await res.text();
      if (res.status !== 201) throw new Error(`POST /diagnose answered ${res.status}: ${text.slice(0, 300)}`);
      const result = JSON.parse(text) as DiagnosisResult;
      if (result.status !== "completed") throw new Error(`server case ended ${result.status}`);
      return { ms: performance.now() - t0, result };
    };
    // Warm-up, unmeasured: a service runs for hours, and the first cases of a fresh
    // process pay for V8 compiling the hot paths (about 3× the CPU per call, see the
    // overhead section), for the store's first pages and the first connections.
    let warmSeq = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (warmSeq < warmups) await post(-1 - warmSeq++);
      }),
    );
    const rows: LoadRow[] = [];
    for (const concurrency of concurrencies) {
      const perClient = ctx.quick ? 1 : concurrency === 1 ? 3 : 2;
      const latencies: number[] = [];
      const chains: number[] = [];
      const rss = sut.threads === 1 ? rssSampler() : null;
      const childCpu0 = await ctx.servers.cpuMicros();
      const ownCpu0 = process.cpuUsage();
      const serverCpu0 = sut.cpuMs();
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
      const ownCpu = cpuMsSince(ownCpu0);
      const serverCpu = sut.cpuMs() - serverCpu0;
      const childCpu = ((await ctx.servers.cpuMicros()) - childCpu0) / 1000;
      const cases = latencies.length;
      // In-process, this process is the server and the load generator at once.
      const loadCpu = sut.threads === 1 ? 0 : ownCpu;
      const throughput = cases / wall;
      // What the scripted latency allows: every client's case takes exactly L × its chain.
      const bound = concurrency / ((L / 1000) * mean(chains));
      // What the CPUs allow: every core busy with all the work per case (server, load
      // generator, scripted servers), and the server's JavaScript on at most `threads` cores.
      const allCpu = (serverCpu + loadCpu + childCpu) / cases;
      const cpuBound = Math.min((ctx.cores * 1000) / allCpu, (sut.threads * 1000) / (serverCpu / cases));
      rows.push({ concurrency, cases, throughput, bound, cpuBound, p50: percentile(latencies, 50), p99: percentile(latencies, 99), chainMs: L * mean(chains), serverCpu: serverCpu / cases, loadCpu: loadCpu / cases, childCpu: childCpu / cases, peakRssMiB: rss ? rss.stop() / 2 ** 20 : null });
      ctx.log(`server (${sut.label}): ${concurrency} concurrent: ${throughput.toFixed(2)} cases/s (bound ${bound.toFixed(2)}, CPU bound ${cpuBound.toFixed(2)}), p50 ${percentile(latencies, 50).toFixed(0)} ms`);
    }
    return rows;
  };

  // 1. One process: the server in this process.
  const dir1 = await mkdtemp(path.join(tmpdir(), "medmmv-bench-server-"));
  const inProcess = await startServer(ctx.config(envFor(dir1)), { handleSignals: false });
  try {
    const own: ServerUnderTest = { label: "`startServer` in the benchmark process", address: inProcess.address, cpuMs: () => cpuMsSince({ user: 0, system: 0 }), threads: 1, close: () => inProcess.close() };
    sections.push({ server: own.label, rows: await measure(own, [1, 8, 64]) });
  } finally {
    await inProcess.close();
    await rm(dir1, { recursive: true, force: true });
  }

  // 2. Two server processes on one port and one store.
  const dir2 = await mkdtemp(path.join(tmpdir(), "medmmv-bench-workers-"));
  const cfg = ctx.config(envFor(dir2));
  const workerEnv: Record<string, string> = {
    ...envFor(dir2),
    OPENAI_BASE_URL: cfg.llm.baseUrl!,
    OPENAI_API_KEY: "bench",
    MEDMMV_MODEL: cfg.llm.models.executor!,
    MEDMMV_JUDGE_MODEL: cfg.llm.models.judge!,
    TAVILY_API_KEY: "bench",
    TAVILY_BASE_URL: cfg.search.baseUrl,
    MEDMMV_MAX_CONCURRENCY: "1024",
    MEDMMV_LLM_TIMEOUT_MS: "60000",
  };
  const workers = await startWorkers(workerEnv, WORKERS);
  try {
    sections.push({ server: workers.label, rows: await measure(workers, [8, 64]) });
  } finally {
    await workers.close();
    await rm(dir2, { recursive: true, force: true });
  }

  for (const s of sections) {
    const r = s.rows.find((x) => x.concurrency === 64);
    if (r) verdicts.push({ target: `server throughput at 64 concurrent cases ≥ ${pct(TARGET_OF_BOUND)} of the latency bound (${s.server})`, measured: `${fmt(r.throughput, 2)} cases/s = ${pct(r.throughput / r.bound, 1)} of ${fmt(r.bound, 1)} (CPU bound ${fmt(r.cpuBound, 1)})`, met: r.throughput / r.bound >= TARGET_OF_BOUND });
  }
  const tables = sections.flatMap((s) => [
    `**${s.server}**`,
    "",
    table(
      ["concurrent cases", "cases", "cases/s", "latency bound cases/s", "of bound", "CPU bound cases/s", "of CPU bound", "p50 ms", "p99 ms", "L × chain ms", "server CPU ms/case", "load generator CPU ms/case", "scripted CPU ms/case", "peak RSS MiB"],
      s.rows.map((r) => [r.concurrency, r.cases, fmt(r.throughput, 2), fmt(r.bound, 2), `**${pct(r.throughput / r.bound, 1)}**`, fmt(r.cpuBound, 2), pct(r.throughput / r.cpuBound, 0), fmt(r.p50, 0), fmt(r.p99, 0), fmt(r.chainMs, 0), fmt(r.serverCpu, 0), r.loadCpu ? fmt(r.loadCpu, 1) : "(in server CPU)", fmt(r.childCpu, 0), r.peakRssMiB === null ? "–" : fmt(r.peakRssMiB, 0)]),
    ),
    "",
  ]);
  const single = sections[0]!.rows.find((r) => r.concurrency === 64);
  const multi = sections[1]?.rows.find((r) => r.concurrency === 64);
  const body = [
    `The bench case (long, one image, k = 5 distinct rollout paths, no repairs, 8 search pairs) posted by C clients to \`POST /diagnose\`, each waiting for the 201 with the result and then posting the next. L = ${L} ms per model call and search; MEDMMV_MAX_CONCURRENCY = 1024 (the limiter never binds); API-key auth, SQLite store in a temporary directory with the LangGraph checkpointer, response cache off. ${warmups} unmeasured warm-up cases first (8 at a time) for each set-up. Two set-ups: \`startServer(config)\` in the benchmark process (which is also the load generator), then \`medmmv serve --workers ${WORKERS}\` as an operator runs it (the CLI through tsx: a primary and ${WORKERS} server processes on one port and one store; their CPU read from /proc).`,
    "",
    ...tables,
    `- **latency bound** = C ÷ (L × mean critical path of the cases served): the rate if every case took exactly its chain of dependent calls.`,
    `- **CPU bound** = the smaller of ${ctx.cores} cores ÷ all CPU per case (server processes, load generator, scripted servers: all on this machine's cores) and (JavaScript threads of the server) ÷ server CPU per case. When it is below the latency bound, CPU, not the pipeline's structure, caps the throughput. A process's CPU includes V8's helper threads (garbage collection, compilation), which run beside its JavaScript thread, so a process can run a little above its one-thread bound.`,
    `- **peak RSS** is the in-process set-up's process (server and load generator), sampled every 20 ms.`,
    ...(single ? ["", reading(single, multi ?? null, ctx.cores)] : []),
  ].join("\n");
  return { id: "server-throughput", title: "Server throughput and latency", command: `npm run bench -- --only server-throughput${ctx.argsNote}`, body, verdicts, seconds: (Date.now() - started) / 1000 };
}

/** What the 64-client rows mean on this machine: which bound binds, and what meeting the target would take. */
function reading(single: LoadRow, multi: LoadRow | null, cores: number): string {
  const need = TARGET_OF_BOUND * single.bound;
  const parts = [
    `Reading: at 64 concurrent cases one server process ran at ${fmt(single.throughput, 1)} cases/s, ${pct(single.throughput / single.cpuBound, 0)} of its CPU bound and ${pct(single.throughput / single.bound, 1)} of the latency bound (${fmt(single.bound, 1)}).`,
  ];
  if (single.cpuBound < need) {
    parts.push(
      `${pct(TARGET_OF_BOUND)} of the latency bound is ${fmt(need, 1)} cases/s: ${fmt(1000 / need, 0)} ms of one JavaScript thread per case, against the ${fmt(single.serverCpu, 0)} ms a case costs the server (the pipeline's own share is in the overhead section), so one process cannot get there on any machine.`,
    );
  }
  if (multi) {
    const allCpu = multi.serverCpu + multi.loadCpu + multi.childCpu;
    parts.push(
      `${WORKERS} server processes ran at ${fmt(multi.throughput, 1)} cases/s (${fmt(multi.throughput / single.throughput, 2)}× one process), ${pct(multi.throughput / multi.cpuBound, 0)} of their CPU bound: all the work of a case (server ${fmt(multi.serverCpu, 0)} ms, load generator ${fmt(multi.loadCpu, 0)} ms, scripted servers ${fmt(multi.childCpu, 0)} ms) shares this machine's ${cores} cores, which caps it at ${fmt((cores * 1000) / allCpu, 1)} cases/s. Reaching ${fmt(need, 1)} cases/s needs about ${fmt((need * allCpu) / 1000, 1)} cores' worth of CPU at this cost per case, with about ${Math.ceil((need * multi.serverCpu) / 1000)} server workers: not on this ${cores}-core machine.`,
    );
  }
  return parts.join(" ");
}
