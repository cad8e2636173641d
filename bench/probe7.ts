import { Session } from "node:inspector/promises";
import fs from "node:fs";
import { startBenchServers } from "./harness/servers.js";
import { makeConfig } from "./harness/context.js";
import { benchCase } from "./harness/cases.js";
import { Pipeline, pipelineOptions } from "../src/graph/pipeline.js";
const srv = await startBenchServers();
await srv.setScenario({ rolloutAnswers: ["A", "A", "B", "A", "C"], identicalReasoning: false, repairsNeeded: { A: 1, B: 1, C: 1 } });
const cfg = makeConfig(srv);
const p = new Pipeline(cfg);
const imgs = Number(process.argv[3] ?? 1);
for (let i = 0; i < 3; i++) await p.run(benchCase(`w${i}`, { length: "long", images: imgs }), pipelineOptions(cfg, {}));
const s = new Session(); s.connect(); await s.post("Profiler.enable"); if (process.argv[2] === "prof") await s.post("Profiler.start");
const N = 10; let calls = 0; const c0 = process.cpuUsage(); const sc0 = await srv.cpuMicros();
for (let i = 0; i < N; i++) { const { result } = await p.run(benchCase(`c${i}`, { length: "long", images: imgs }), pipelineOptions(cfg, {})); calls += result.usage.llmCalls + result.usage.searchCalls; }
const u = process.cpuUsage(c0); const sc = await srv.cpuMicros() - sc0;
if (process.argv[2] === "prof") { const { profile } = await s.post("Profiler.stop"); fs.writeFileSync("/tmp/run7.cpuprofile", JSON.stringify(profile)); }
console.log("client cpu/case", ((u.user + u.system) / 1000 / N).toFixed(0), "per call", ((u.user + u.system) / 1000 / calls).toFixed(2), "server/call", (sc / 1000 / calls).toFixed(2), "calls/case", calls / N);
await srv.close();
