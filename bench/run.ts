/**
 * `npm run bench`: the performance benchmark (what a user of the service feels). Runs the pipeline against the
 * scripted model and search servers (in a child process) with a fixed per-call latency,
 * and writes BENCHMARKS.md from what it measured. Not a test: nothing here asserts; every
 * target is reported as met or not met.
 *
 *   npm run bench                         all sections → BENCHMARKS.md
 *   npm run bench -- --only cpu-share     some sections → stdout (BENCHMARKS.md untouched)
 *   npm run bench -- --latency 100        L for the latency-bound sections (default 200 ms)
 *   npm run bench -- --quick              smaller samples (a smoke run of the benchmark)
 *   npm run bench -- --out FILE           the report to FILE instead (with or without --only)
 */
import { writeFile } from "node:fs/promises";
import os from "node:os";
import { parseArgs } from "node:util";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startBenchServers } from "./harness/servers.js";
import { makeConfig, type BenchContext } from "./harness/context.js";
import { renderMarkdown } from "./harness/markdown.js";
import { machineInfo } from "../src/scripted/machine-info.js";
import { measureHostSpeed } from "./harness/host-speed.js";
import type { SectionReport } from "./harness/report.js";
import { criticalPath } from "./sections/critical-path.js";
import { cpuShare } from "./sections/cpu-share.js";
import { concurrentLatency } from "./sections/concurrent-latency.js";
import { costVsCot } from "./sections/cost-vs-cot.js";
import { callsGrowth } from "./sections/calls-growth.js";
import { adaptiveRollouts } from "./sections/adaptive.js";
import { responseCache } from "./sections/response-cache.js";
import { evalBatch } from "./sections/eval-batch.js";
import { fhirIntake } from "./sections/fhir-intake.js";
import { replicas } from "./sections/replicas.js";
import { cliStartup } from "./sections/cli-startup.js";
import { caseSearch } from "./sections/case-search.js";
import { openEnded } from "./sections/open-ended.js";
import { lyingPacs } from "./sections/lying-pacs.js";

const SECTIONS: Record<string, (ctx: BenchContext) => Promise<SectionReport>> = {
  "cpu-share": cpuShare,
  "critical-path": criticalPath,
  "concurrent-latency": concurrentLatency,
  "cost-vs-cot": costVsCot,
  "calls-growth": callsGrowth,
  adaptive: adaptiveRollouts,
  "response-cache": responseCache,
  "eval-batch": evalBatch,
  "fhir-intake": fhirIntake,
  replicas,
  "cli-startup": cliStartup,
  "case-search": caseSearch,
  "open-ended": openEnded,
  "lying-pacs": lyingPacs,
};

const { values } = parseArgs({
  options: {
    only: { type: "string" },
    latency: { type: "string", default: "200" },
    quick: { type: "boolean", default: false },
    out: { type: "string" },
  },
});

const only = values.only ? values.only.split(",").map((s) => s.trim()) : null;
for (const id of only ?? []) if (!SECTIONS[id]) throw new Error(`unknown section "${id}"; sections: ${Object.keys(SECTIONS).join(", ")}`);
const latencyMs = Number(values.latency);
if (!Number.isFinite(latencyMs) || latencyMs < 1) throw new Error("--latency must be a positive number of ms");
const argsNote = `${latencyMs !== 200 ? ` --latency ${latencyMs}` : ""}${values.quick ? " --quick" : ""}`;

const machineBefore = machineInfo();
// Before anything else runs, so that nothing of the benchmark's own competes with it.
const hostSpeed = await measureHostSpeed();
const servers = await startBenchServers();
const ctx: BenchContext = {
  servers,
  latencyMs,
  cores: os.availableParallelism(),
  quick: values.quick ?? false,
  argsNote,
  config: (env) => makeConfig(servers, env),
  log: (line) => process.stderr.write(`[bench] ${line}\n`),
};

const reports: SectionReport[] = [];
const started = Date.now();
try {
  for (const [id, fn] of Object.entries(SECTIONS)) {
    if (only && !only.includes(id)) continue;
    ctx.log(`section ${id}…`);
    await servers.setLatency(0);
    await servers.reset();
    reports.push(await fn(ctx));
  }
} finally {
  await servers.close();
}

const markdown = renderMarkdown({ reports, machineBefore, hostSpeed, machineAfter: machineInfo(), totalSeconds: (Date.now() - started) / 1000, latencyMs, argsNote, partial: only !== null });
const out = values.out ?? (only ? null : path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "BENCHMARKS.md"));
if (out) {
  await writeFile(out, markdown);
  ctx.log(`wrote ${out}`);
} else {
  process.stdout.write(markdown);
}
