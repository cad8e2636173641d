import { Pipeline, pipelineOptions } from "../../src/core/workflow/pipeline.js";
import type { BenchContext } from "../harness/context.js";
import { distinctScenario } from "../harness/bench-scenario.js";
import { benchCase } from "../harness/cases.js";
import { cpuMsSince, median } from "../harness/stats.js";
import { fmt, pct, span, table, type SectionReport } from "../harness/report.js";

export const TARGET_CPU_SHARE = 0.05;
/** A real model call takes 1–30 s; the share is measured at the short end of that range. */
const L_MS = 1000;
const SCENARIO = distinctScenario({ A: 1, B: 1, C: 1 });

/**
 * What the client and the orchestration cost a user: CPU time of the pipeline process
 * during a case ÷ the case's wall time, with every model call and search taking L = 1 s.
 * The scripted servers run in a child process; their CPU is not counted.
 */
export async function cpuShare(ctx: BenchContext): Promise<SectionReport> {
  const started = Date.now();
  const cfg = ctx.config();
  const pipeline = new Pipeline(cfg);
  const opts = pipelineOptions(cfg, { k: 5, maxRepairs: 3 });
  await ctx.servers.setScenario(SCENARIO);

  // The first cases of a fresh process pay for V8 compiling the hot paths: measured at
  // L = 0 as "cold" and reported beside the steady state, not hidden.
  await ctx.servers.setLatency(0);
  const warmups = ctx.quick ? 2 : 10;
  const cold0 = process.cpuUsage();
  const { result: first } = await pipeline.run(benchCase("cpu-cold"), opts);
  const coldCpu = cpuMsSince(cold0);
  for (let i = 1; i < warmups; i++) await pipeline.run(benchCase(`cpu-warm-${i}`), opts);

  await ctx.servers.setLatency(L_MS);
  const runs = ctx.quick ? 1 : 3;
  const rows: Array<Array<string | number>> = [];
  const shares: number[] = [];
  const perCall: number[] = [];
  const searchPairs: number[] = [];
  for (let i = 0; i < runs; i++) {
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const { result } = await pipeline.run(benchCase(`cpu-${i}`), opts);
    const wall = performance.now() - t0;
    const cpu = cpuMsSince(cpu0);
    if (result.status !== "completed") throw new Error(`cpu-share case ended ${result.status}`);
    const calls = result.usage.llmCalls + result.usage.searchCalls;
    searchPairs.push(result.usage.byAgent["web-search"]?.calls ?? 0);
    shares.push(cpu / wall);
    perCall.push(cpu / calls);
    rows.push([i + 1, calls, result.usage.criticalPathCalls ?? 0, fmt(wall, 0), fmt(cpu, 0), fmt(cpu / calls, 2), `**${pct(cpu / wall, 2)}**`]);
    ctx.log(`cpu share: run ${i + 1}: ${cpu.toFixed(0)} ms CPU in ${wall.toFixed(0)} ms wall`);
  }
  const share = median(shares);
  const firstCalls = first.usage.llmCalls + first.usage.searchCalls;
  const verdicts = [{ target: `client + orchestration CPU ≤ ${pct(TARGET_CPU_SHARE)} of a case's wall time (L = 1 s, median of ${runs})`, measured: `${pct(share, 2)} (max ${pct(Math.max(...shares), 2)})`, met: share <= TARGET_CPU_SHARE }];
  const body = [
    `The long case with one image, k = 5 rollouts with distinct reasoning, every path repaired once, ${span(searchPairs)} search pairs; L = ${L_MS} ms for every model call and search. Cases one at a time, after ${warmups} warm-up cases at L = 0 in the same process. CPU is \`process.cpuUsage()\` of the pipeline process (user + system, all its threads: the LangChain client, the retry layer and limiter, the LangGraph workflow, agents, evidence graph, scoring, garbage collection); the scripted servers run in a child process and are not counted.`,
    "",
    table(["run", "calls", "chain", "wall ms", "CPU ms", "CPU ms per call", "CPU ÷ wall"], rows),
    "",
    `The first case of the fresh process (cold, L = 0) used ${fmt(coldCpu, 0)} ms of CPU for ${firstCalls} calls (${fmt(coldCpu / firstCalls, 2)} ms per call); in the steady state a call costs ${fmt(median(perCall), 2)} ms (median). How much of it lands on the critical path shows as the excess there (next section).`,
  ].join("\n");
  return { id: "cpu-share", title: "CPU share of a case", command: `npm run bench -- --only cpu-share${ctx.argsNote}`, body, verdicts, seconds: (Date.now() - started) / 1000 };
}
