import { Session } from "node:inspector/promises";
import fs from "node:fs";
import { startScriptedOpenAI } from "../test/support/scripted-openai-server.js";
import { startScriptedTavily } from "../test/support/scripted-tavily-server.js";
import { clinicalScenario } from "../test/support/clinical-scenario.js";
import { testConfig } from "../test/support/test-config.js";
import { chestPainCase } from "../test/support/sample-cases.js";
import { Pipeline, pipelineOptions } from "../src/graph/pipeline.js";

const model = await startScriptedOpenAI({ scenario: clinicalScenario({ rolloutAnswers: ["B"] }), latencyMs: 0 });
const search = await startScriptedTavily({ latencyMs: 0 });
const cfg = testConfig(model.baseUrl, { TAVILY_API_KEY: "t", TAVILY_BASE_URL: search.baseUrl, MEDMMV_MAX_CONCURRENCY: "256" });
const p = new Pipeline(cfg);
const N = Number(process.argv[2] ?? 20);
for (let i = 0; i < 5; i++) await p.run(chestPainCase(`w${i}`), pipelineOptions(cfg, {}));
const s = new Session(); s.connect(); await s.post("Profiler.enable"); await s.post("Profiler.start");
const t0 = performance.now(); const c0 = process.cpuUsage(); let calls = 0;
for (let i = 0; i < N; i++) { const { result } = await p.run(chestPainCase(`c${i}`), pipelineOptions(cfg, {})); calls += result.usage.llmCalls + result.usage.searchCalls; }
const c = process.cpuUsage(c0);
const { profile } = await s.post("Profiler.stop");
fs.writeFileSync("/tmp/run.cpuprofile", JSON.stringify(profile));
console.log("wall/case", ((performance.now() - t0) / N).toFixed(1), "cpu/call ms", ((c.user + c.system) / 1000 / calls).toFixed(2), "calls/case", calls / N);
await model.close(); await search.close();
