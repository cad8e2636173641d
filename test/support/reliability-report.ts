/**
 * `npm run reliability`: RELIABILITY.md from what the suites and the load runs recorded in
 * test-artifacts/reliability/*.json — fault and abuse rows (scenario, trials, outcome,
 * items lost) grouped by suite, the load and soak figures, and the machine. Nothing in
 * the table is typed by hand; run the suites (`npm run test:faults`, `npx vitest run
 * test/abuse`) and `npm run load` first.
 *
 * Rows are taken only from a run that passed: each `<name>.json` of rows needs the
 * `<name>.status.json` its suite wrote beside it, saying every test of the file passed and
 * carrying the hash of exactly those rows. Otherwise nothing is written and the exit code
 * is 1, naming the artefacts and the tests that did not pass.
 *
 * `npm test` runs fewer kill trials per kind and sends part of the fuzz's bodies
 * (NPM_TEST_FAULT_TRIALS, NPM_TEST_FUZZ_SHARE); so that
 * the report's figures come from the full count, `npm run reliability` first runs the fault suite
 * with FULL_FAULT_TRIALS and the abuse suite with every fuzz body (test/support/fault-trials.ts;
 * MEDMMV_FAULT_TRIALS and MEDMMV_FUZZ_SHARE override), then writes the report.
 *
 * Options: --report-only (write from the artefacts as they are); for the report's own test,
 * --dir <artefacts> --out <file> (implies --report-only).
 */
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import type { LoadReport } from "../../load/load.js";
import type { SoakReport } from "../../load/soak.js";
import { describeMachine, machineInfo } from "../../src/scripted/machine-info.js";
import { rowsDigest, statusFileOf, type ReliabilityRow, type ReliabilityRunStatus } from "./reliability-recorder.js";
import { FULL_FAULT_TRIALS, FULL_FUZZ_SHARE } from "./fault-trials.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const { values: args } = parseArgs({ options: { dir: { type: "string" }, out: { type: "string" }, "report-only": { type: "boolean" } } });
if (!args.dir && !args["report-only"]) {
  const trials = process.env.MEDMMV_FAULT_TRIALS ?? String(FULL_FAULT_TRIALS);
  process.stderr.write(`reliability: running the fault suite with ${trials} trials per kind (npx vitest run test/faults)\n`);
  // Its rows are recorded only if it passes; a failure shows in the report's refusal below.
  spawnSync("npx", ["vitest", "run", "test/faults"], { cwd: ROOT, stdio: "inherit", env: { ...process.env, MEDMMV_FAULT_TRIALS: trials } });
  const share = process.env.MEDMMV_FUZZ_SHARE ?? String(FULL_FUZZ_SHARE);
  process.stderr.write(`reliability: running the abuse suite with ${share} of the fuzz's bodies (npx vitest run test/abuse)\n`);
  spawnSync("npx", ["vitest", "run", "test/abuse"], { cwd: ROOT, stdio: "inherit", env: { ...process.env, MEDMMV_FUZZ_SHARE: share } });
}
const DIR = args.dir ? path.resolve(args.dir) : path.join(ROOT, "test-artifacts", "reliability");
const OUT = args.out ? path.resolve(args.out) : path.join(ROOT, "RELIABILITY.md");

// The artefacts' shapes, from the code that writes them.
type Row = ReliabilityRow;

const SUITE_TITLES: Record<string, string> = {
  llm: "Model provider faults (retry layer, structured output)",
  pipeline: "Pipeline faults (an agent failing for good, a branch throwing, search down)",
  kill: "Process kills (SIGKILL at random points, restart / --resume)",
  "several-processes": "Several processes on one store and Redis (BullMQ locks, a killed process's cases taken by a peer, serve --workers)",
  "replica-kill-trials": "Three replicas on Postgres + Redis (SIGKILL, Redis restart, Postgres restart; provider cap counted at the scripted server)",
  "crash-quarantine": "Crash quarantine (a case that kills its process, RUN_CRASHED)",
  cancel: "Cancellation",
  abuse: "Abuse (fuzzing, prompt injection, patient data, image URLs)",
};
const SUITE_ORDER = ["llm", "pipeline", "kill", "several-processes", "replica-kill-trials", "crash-quarantine", "cancel", "abuse"];

function isRow(v: unknown): v is Row {
  const r = v as Row;
  return !!r && typeof r.suite === "string" && typeof r.scenario === "string" && typeof r.trials === "number" && typeof r.outcome === "string" && typeof r.itemsLost === "number";
}

/** Table cells: one line, no pipes, long float noise trimmed (1144.93310546875 → 1144.9). */
function cell(s: string | number): string {
  return String(s)
    .replace(/(\d+\.\d)\d{2,}/g, "$1")
    .replace(/\|/g, "\\|")
    .replace(/\s*\n\s*/g, " ");
}

const files = (() => {
  try {
    return readdirSync(DIR)
      .filter((f) => f.endsWith(".json") && !f.endsWith(".status.json"))
      .sort();
  } catch {
    return [];
  }
})();
if (files.length === 0) {
  process.stderr.write(`reliability: nothing recorded in ${DIR}; run npm run test:faults, npx vitest run test/abuse and npm run load first\n`);
  process.exit(1);
}

/** Why rows artefact `f` (with this text) is not from a passing run, or null when it is. */
function whyNotPassed(f: string, text: string): string | null {
  const statusFile = statusFileOf(f.replace(/\.json$/, ""));
  let status: ReliabilityRunStatus;
  try {
    status = JSON.parse(readFileSync(path.join(DIR, statusFile), "utf8")) as ReliabilityRunStatus;
  } catch {
    return `${f}: no readable ${statusFile}, so nothing says the run that wrote it passed`;
  }
  if (status.rowsSha256 !== rowsDigest(text)) return `${f}: not the rows ${statusFile} describes (written by another run)`;
  if (!status.passed) return `${f}: its run did not pass (${status.notPassed.length} of ${status.tests} tests: ${status.notPassed.slice(0, 5).join("; ")}${status.notPassed.length > 5 ? "; ..." : ""})`;
  return null;
}

const problems: string[] = [];
const rows: Array<Row & { file: string }> = [];
let load: LoadReport | null = null;
let soak: SoakReport | null = null;
const sources: string[] = [];
for (const f of files) {
  const full = path.join(DIR, f);
  // Read once: the bytes whyNotPassed hashes are then the bytes parsed here.
  let text: string;
  let data: unknown;
  try {
    text = readFileSync(full, "utf8");
    data = JSON.parse(text);
  } catch {
    process.stderr.write(`reliability: skipping ${f} (not JSON)\n`);
    continue;
  }
  sources.push(`\`${f}\` (${statSync(full).mtime.toISOString().slice(0, 16).replace("T", " ")} UTC)`);
  if (Array.isArray(data)) {
    const refused = whyNotPassed(f, text);
    if (refused) {
      problems.push(refused);
      continue;
    }
    for (const r of data) if (isRow(r)) rows.push({ ...r, file: f });
  } else if ((data as LoadReport).kind === "load") {
    load = data as LoadReport;
  } else if ((data as SoakReport).kind === "soak") {
    soak = data as SoakReport;
  }
}

if (problems.length) {
  process.stderr.write(`reliability: refusing to write ${path.relative(ROOT, OUT) || OUT}: rows from runs that did not pass\n${problems.map((p) => `  - ${p}`).join("\n")}\nrerun those suites until they pass, then npm run reliability\n`);
  process.exit(1);
}

const here = machineInfo();

const out: string[] = [];
const lostTotal = rows.reduce((n, r) => n + r.itemsLost, 0);
out.push("# Reliability");
out.push("");
out.push(
  "<!-- Generated by `npm run reliability` (test/support/reliability-report.ts) from test-artifacts/reliability/*.json. Do not edit by hand: rerun the suites and the generator. -->",
);
out.push("");
out.push(
  `What the fault-injection, kill, abuse, load and soak runs measured. Every row is written by the test that ran the scenario; **items lost** counts accepted cases or planned eval items that did not reach a terminal state exactly once (must be 0). Total items lost: **${lostTotal}** over ${rows.length} scenarios.`,
);
out.push("");
out.push("## Machine");
out.push("");
out.push(`- Report generated on: ${describeMachine(here)}, ${here.at.slice(0, 10)}`);
if (load) out.push(`- Load run measured on: ${describeMachine(load.machine)}, ${load.machine.at.slice(0, 16).replace("T", " ")} UTC`);
if (soak) out.push(`- Soak run measured on: ${describeMachine(soak.machine)}, ${soak.machine.at.slice(0, 16).replace("T", " ")} UTC`);
out.push("");

/** Rows of suite "security" are the attacks of the hostile-input review: a table of their own, after the faults. */
const SECURITY_SUITE = "security";
/** Where the security rows come from (each file records its own; a file that did not pass records none). */
const SECURITY_TESTS = "npx vitest run test/server/http test/server/engine/foreign-jobs.test.ts test/core/agents/prompt-fences.test.ts";
const suites = [...new Set(rows.map((r) => r.suite))].filter((x) => x !== SECURITY_SUITE).sort((a, b) => {
  const ia = SUITE_ORDER.indexOf(a);
  const ib = SUITE_ORDER.indexOf(b);
  return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib) || a.localeCompare(b);
});
out.push("## Fault and abuse scenarios");
out.push("");
for (const suite of suites) {
  const list = rows.filter((r) => r.suite === suite);
  out.push(`### ${SUITE_TITLES[suite] ?? suite}`);
  out.push("");
  out.push("| scenario | trials | outcome | items lost |");
  out.push("|---|---:|---|---:|");
  for (const r of list) out.push(`| ${cell(r.scenario)} | ${r.failed ? `${r.trials} (**${r.failed} failed**)` : r.trials} | ${cell(r.outcome)} | ${r.itemsLost === 0 ? "0" : `**${r.itemsLost}**`} |`);
  out.push("");
}

const attacks = rows.filter((r) => r.suite === SECURITY_SUITE);
out.push("## Security");
out.push("");
if (!attacks.length) {
  out.push(`_No security run recorded: run \`${SECURITY_TESTS}\`._`);
} else {
  out.push(
    "Attacks on the service — a running server with two tenants (real sockets on loopback, or Fastify's inject), two deployments on one Redis, the prompt fences — each reproduced by a test that failed before its fix; a row is written only when the whole file passed.",
  );
  out.push("");
  out.push("| attack | tries | outcome |");
  out.push("|---|---:|---|");
  for (const r of attacks) out.push(`| ${cell(r.scenario)} | ${r.failed ? `${r.trials} (**${r.failed} failed**)` : r.trials} | ${cell(r.outcome)} |`);
}
out.push("");

out.push("## Load");
out.push("");
if (!load) {
  out.push("_No load run recorded: run `npm run load`._");
} else {
  out.push(load.description + ".");
  out.push("");
  out.push("| MEDMMV_MAX_CONCURRENCY | requests | errors | p50 ms | p90 ms | p99 ms | max ms | throughput (cases/s) | model calls / case | peak calls in flight | server peak RSS (MiB) |");
  out.push("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
  for (const r of load.runs)
    out.push(
      `| ${r.llmConcurrency} | ${r.requests} | ${r.errors === 0 ? "0" : `**${r.errors}**`} | ${r.latencyMs.p50} | ${r.latencyMs.p90} | ${r.latencyMs.p99} | ${r.latencyMs.max} | ${r.throughputPerSec} | ${r.modelCallsPerCase} | ${r.peakModelCallsInFlight} | ${r.serverPeakRssMiB ?? "n/a"} |`,
    );
}
out.push("");
out.push("## Soak");
out.push("");
if (!soak) {
  out.push("_No soak run recorded: run `npm run load`._");
} else {
  out.push(soak.description + ".");
  out.push("");
  out.push("| requests | errors | cases created | cases unfinished | p50 ms | p99 ms | wall s | heap after warm-up (MiB) | heap after soak + GC (MiB) | delta (MiB) | tolerance (MiB) | back to baseline | server peak RSS (MiB) |");
  out.push("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|");
  out.push(
    `| ${soak.requestsSent} | ${soak.errors} | ${soak.casesCreated} | ${soak.casesUnfinished} | ${soak.latencyMs.p50} | ${soak.latencyMs.p99} | ${Math.round(soak.wallMs / 1000)} | ${soak.heapMiB.baseline} | ${soak.heapMiB.final} | ${soak.heapMiB.delta} | ${soak.heapMiB.tolerance} | ${soak.backToBaseline ? "yes" : "**no**"} | ${soak.serverPeakRssMiB ?? "n/a"} |`,
  );
  if (soak.heapMiB.samples.length) {
    out.push("");
    out.push(`Heap after GC along the way (MiB): ${soak.heapMiB.samples.map((s) => `${s.afterRequests} req → ${s.heapUsed}`).join(" · ")}.`);
  }
}
out.push("");
out.push("## How to reproduce");
out.push("");
out.push("```sh");
out.push("npx vitest run test/abuse      # fuzzing, prompt injection, patient data, image URLs");
out.push(`${SECURITY_TESTS}   # the security table`);
out.push("npm run load                   # load (200 concurrent) and soak (10,000 requests)");
out.push(`npm run reliability            # the fault suite with ${FULL_FAULT_TRIALS} kill trials per kind (MEDMMV_FAULT_TRIALS), then this file`);
out.push("```");
out.push("");
out.push(`Sources: ${sources.join(", ")}.`);
out.push("");

writeFileSync(OUT, out.join("\n"));
process.stderr.write(`reliability: wrote ${path.relative(ROOT, OUT)} (${rows.length} scenarios, ${lostTotal} items lost${load ? ", load" : ""}${soak ? ", soak" : ""})\n`);
