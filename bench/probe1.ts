import { Session } from "node:inspector/promises";
import fs from "node:fs";
import { startBenchServers } from "./harness/servers.js";
import { testConfig } from "../test/support/test-config.js";
import { chestPainCase } from "../test/support/sample-cases.js";
import { Pipeline, pipelineOptions } from "../src/graph/pipeline.js";

const srv = await startBenchServers();
await srv.setScenario({ rolloutAnswers: ["B"] });
const cfg = testConfig(srv.modelBaseUrl, { TAVILY_API_KEY: "t", TAVILY_BASE_URL: srv.searchBaseUrl, MEDMMV_MAX_CONCURRENCY: "256" });
const p = new Pipeline(cfg);
const N = Number(process.argv[2] ?? 20);
for (let i = 0; i < 5; i++) await p.run(chestPainCase(`w${i}`), pipelineOptions(cfg, {}));
const s = new Session(); s.connect(); await s.post("Profiler.enable"); if (process.argv[3]) await s.post("Profiler.start");
const sc0 = await srv.cpuMicros();
const t0 = performance.now(); const c0 = process.cpuUsage(); let calls = 0;
for (let i = 0; i < N; i++) { const { result } = await p.run(chestPainCase(`c${i}`), pipelineOptions(cfg, {})); calls += result.usage.llmCalls + result.usage.searchCalls; }
const c = process.cpuUsage(c0);
const sc = await srv.cpuMicros() - sc0;
if (process.argv[3]) { const { profile } = await s.post("Profiler.stop"); fs.writeFileSync("/tmp/run.cpuprofile", JSON.stringify(profile)); }
console.log("wall/case", ((performance.now() - t0) / N).toFixed(1), "client cpu/call ms", ((c.user + c.system) / 1000 / calls).toFixed(2), "server cpu/call", (sc / 1000 / calls).toFixed(2), "calls/case", calls / N);
await srv.close();
