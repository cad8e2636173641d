/**
 * `npm run load`: the load run, then the soak run; each writes its JSON to
 * test-artifacts/reliability/ (load.json, soak.json) for `npm run reliability`.
 * Not part of CI's pass/fail: the exit code says only whether the runs themselves broke.
 *
 *   npm run load -- [--concurrency 200] [--latency 200] [--llm-concurrency 16,128]
 *                   [--soak-requests 10000] [--soak-workers 16] [--only load|soak]
 */
import { runLoad } from "./load.js";
import { numberFlag, writeArtifact } from "./lib.js";
import { runSoak } from "./soak.js";

const argv = process.argv.slice(2);
const only = argv.includes("--only") ? argv[argv.indexOf("--only") + 1] : null;
const llmFlag = argv.includes("--llm-concurrency") ? argv[argv.indexOf("--llm-concurrency") + 1]! : "16,128";
const llmConcurrency = llmFlag.split(",").map(Number);
if (llmConcurrency.some((n) => !Number.isInteger(n) || n < 1)) throw new Error("--llm-concurrency expects integers, e.g. 16,128");

let failed = false;
if (only !== "soak") {
  const report = await runLoad({ concurrency: numberFlag(argv, "concurrency", 200), modelLatencyMs: numberFlag(argv, "latency", 200), llmConcurrency });
  const file = writeArtifact("load", report);
  process.stderr.write(`[load] wrote ${file}\n`);
  if (report.runs.some((r) => r.errors > 0)) {
    process.stderr.write("[load] ERRORS under load — see load.json\n");
    failed = true;
  }
}
if (only !== "load") {
  const report = await runSoak({ requests: numberFlag(argv, "soak-requests", 10_000), workers: numberFlag(argv, "soak-workers", 16), modelLatencyMs: numberFlag(argv, "soak-latency", 5), maxMs: numberFlag(argv, "soak-max-seconds", 300) * 1000 });
  const file = writeArtifact("soak", report);
  process.stderr.write(`[soak] wrote ${file}: ${report.requestsSent} requests, ${report.errors} errors, heap ${report.heapMiB.baseline} → ${report.heapMiB.final} MiB (${report.backToBaseline ? "back to baseline" : "NOT back to baseline"})\n`);
  if (report.errors > 0 || !report.backToBaseline || report.casesUnfinished > 0) failed = true;
}
process.exitCode = failed ? 1 : 0;
