import type { BenchContext } from "../harness/context.js";
import { runMedmmv, serveStartMs } from "../harness/cli-process.js";
import { scriptedChildEnv } from "../harness/context.js";
import { nodeStartTimes } from "../harness/host-speed.js";
import { median } from "../harness/stats.js";
import { fmt, table, type SectionReport } from "../harness/report.js";

export const TARGET_STARTUP_MS = 300;
const RUNS = 5;

/** What each timed command line is, and the exit code it must end with. */
const COMMANDS: Array<{ args: string[]; what: string; code: number; target: boolean }> = [
  { args: ["--help"], what: "the command list", code: 0, target: true },
  { args: ["diagnose", "--help"], what: "one command's options", code: 0, target: true },
  { args: ["--version"], what: "the version", code: 0, target: true },
  { args: ["diagnose"], what: "an argument error (the case file missing): exit 2 with the usage", code: 2, target: true },
  { args: ["eval", "--help"], what: "eval's options (declared by the datasets, methods and studies it loads)", code: 0, target: false },
];

/**
 * Start-up of the CLI: wall time from spawn to exit of `medmmv …` as a user runs it, each a
 * fresh process (a cold Node), median of 5, beside Node's own start.
 */
export async function cliStartup(ctx: BenchContext): Promise<SectionReport> {
  const started = Date.now();
  // The first run after the sources change builds the CLI's bundle: not what is measured, but shown.
  const first = await runMedmmv(["--version"]);
  if (first.code !== 0) throw new Error(`medmmv --version exited ${first.code}: ${first.stderr}`);
  const node = await nodeStartTimes(RUNS);
  const rows: Array<Array<string | number>> = [["`node -e 0` (Node's own start)", "", fmt(median(node), 0), fmt(Math.max(...node), 0)]];
  const verdicts = [];
  for (const c of COMMANDS) {
    const ms: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const r = await runMedmmv(c.args);
      if (r.code !== c.code) throw new Error(`medmmv ${c.args.join(" ")} exited ${r.code}, expected ${c.code}: ${r.stderr}`);
      ms.push(r.ms);
    }
    const med = median(ms);
    ctx.log(`start-up: medmmv ${c.args.join(" ")}: median ${med.toFixed(0)} ms`);
    rows.push([`\`medmmv ${c.args.join(" ")}\``, c.what, fmt(med, 0), fmt(Math.max(...ms), 0)]);
    if (c.target) verdicts.push({ target: `\`medmmv ${c.args.join(" ")}\` answers in under ${TARGET_STARTUP_MS} ms (median of ${RUNS} cold runs)`, measured: `${fmt(med, 0)} ms`, met: med < TARGET_STARTUP_MS });
  }
  // A server's start, to the moment it listens: what every `serve` and every restarted replica pays.
  const serve: number[] = [];
  for (let i = 0; i < RUNS; i++) serve.push(await serveStartMs(scriptedChildEnv(ctx.servers)));
  ctx.log(`start-up: medmmv serve: median ${median(serve).toFixed(0)} ms to listening`);
  rows.push(["`medmmv serve`, to its \"medmmv listening\" line", "a server on a fresh embedded store, no Redis (then stopped)", fmt(median(serve), 0), fmt(Math.max(...serve), 0)]);
  const body = [
    `Each row is ${RUNS} runs of \`node bin/medmmv.js ARGS\` (what the \`medmmv\` bin link runs), each a fresh process, timed by the benchmark from spawn to exit; output discarded. bin/medmmv.js runs the CLI from its esbuild bundle of the sources (bin/cli-bundle.mjs), built by the first run after the sources change — here that run (\`--version\`, untimed in the rows) took ${fmt(first.ms, 0)} ms${first.ms > 2000 ? " (it built the bundle)" : " (the bundle was already built)"}. A command loads its own module when it runs, so \`--help\`, \`--version\` and usage errors load the command table alone. The \`serve\` row runs until the server logs that it listens (a fresh data directory each time, the scripted model configured), then stops it; a server without \`REDIS_URL\` loads no BullMQ or Redis client.`,
    "",
    table(["command", "what it prints", "median ms", "max ms"], rows),
  ].join("\n");
  return { id: "cli-startup", title: "CLI start-up", command: `npm run bench -- --only cli-startup${ctx.argsNote}`, body, verdicts, seconds: (Date.now() - started) / 1000 };
}
