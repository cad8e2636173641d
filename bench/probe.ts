import { startScriptedOpenAI } from "../test/support/scripted-openai-server.js";
import { startScriptedTavily } from "../test/support/scripted-tavily-server.js";
import { clinicalScenario } from "../test/support/clinical-scenario.js";
import { testConfig } from "../test/support/test-config.js";
import { chestPainCase } from "../test/support/sample-cases.js";
import { Pipeline, pipelineOptions } from "../src/graph/pipeline.js";

const L = Number(process.argv[2] ?? 200);
const model = await startScriptedOpenAI({ scenario: clinicalScenario({ rolloutAnswers: ["B"], repairsNeeded: { B: Number(process.argv[3] ?? 0) } }), latencyMs: L });
const search = await startScriptedTavily({ latencyMs: L });
const cfg = testConfig(model.baseUrl, { TAVILY_API_KEY: "t", TAVILY_BASE_URL: search.baseUrl, MEDMMV_MAX_CONCURRENCY: "256" });
const p = new Pipeline(cfg);
for (let i = 0; i < 4; i++) {
  model.reset();
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const { result } = await p.run(chestPainCase(`c${i}`), pipelineOptions(cfg, {}));
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const cp = result.usage.criticalPathCalls!;
  console.log(i, result.status, "wall", wall.toFixed(0), "cp", cp, "ratio", (wall / (L * cp)).toFixed(3), "calls", result.usage.llmCalls, result.usage.searchCalls, "cpu ms", ((cpu.user + cpu.system) / 1000).toFixed(0));
  const log = model.stats().log;
  const t00 = Math.min(...log.map((l) => l.start));
  if (i === 3) for (const l of log) console.log(l.agent.padEnd(20), (l.start - t00).toFixed(0).padStart(6), (l.end! - t00).toFixed(0).padStart(6));
}
await model.close(); await search.close();
