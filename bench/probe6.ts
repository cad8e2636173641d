import { startBenchServers } from "./harness/servers.js";
import { benchCase } from "./harness/cases.js";
import { testConfig } from "../test/support/test-config.js";
import { Pipeline, pipelineOptions } from "../src/graph/pipeline.js";

const L = Number(process.argv[2] ?? 200);
const srv = await startBenchServers();
await srv.setLatency(L);
const cfg = testConfig(srv.modelBaseUrl, { TAVILY_API_KEY: "t", TAVILY_BASE_URL: srv.searchBaseUrl, MEDMMV_MAX_CONCURRENCY: "256" });
const p = new Pipeline(cfg);
for (const rep of [0, 1, 3]) {
  await srv.setScenario({ rolloutAnswers: ["A"], repairsNeeded: { A: rep } });
  for (let i = 0; i < 3; i++) {
    await srv.reset();
    const t0 = performance.now();
    const { result } = await p.run(benchCase(`c${rep}-${i}`), pipelineOptions(cfg, { k: 5 }));
    const wall = performance.now() - t0;
    const cp = result.usage.criticalPathCalls!;
    console.log(rep, i, result.status, result.answer?.option, "wall", wall.toFixed(0), "cp", cp, "ratio", (wall / (L * cp)).toFixed(3), "calls", result.usage.llmCalls, result.usage.searchCalls, JSON.stringify(Object.fromEntries(Object.entries(result.usage.byAgent).map(([k, v]) => [k, v.calls]))));
    if (i === 2 && process.argv[3]) { const log = (await srv.stats(true)).model.log; const t00 = Math.min(...log.map((l) => l.start)); for (const l of log) console.log("   ", l.agent.padEnd(20), (l.start - t00).toFixed(0).padStart(6), (l.end! - t00).toFixed(0).padStart(6)); }
  }
}
await srv.close();
