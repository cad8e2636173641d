import { benchScenario } from "./harness/bench-scenario.js";
import { testConfig } from "../test/support/test-config.js";
import { chestPainCase } from "../test/support/sample-cases.js";
import { Pipeline, pipelineOptions } from "../src/graph/pipeline.js";
import { textOf } from "../src/llm/messages.js";
import type { SearchProvider } from "../src/search/search-provider.js";
import { defaultTavilyResults } from "../test/support/scripted-tavily-server.js";

const sc = benchScenario({ rolloutAnswers: ["B"] });
const search: SearchProvider = { name: "tavily", enabled: true, search: async (q) => ({ query: q, results: defaultTavilyResults(q), retrievedAt: new Date().toISOString() }) };
const cfg = testConfig("http://127.0.0.1:9/v1", { MEDMMV_MAX_CONCURRENCY: "256" });
const p = new Pipeline(cfg, { search });
let calls = 0;
(p.llm as any).structured = async (call: any, ctx: any) => {
  const text = call.messages.map((m: any) => textOf(m.content)).join("\n");
  const agent = /medmmv-agent:\s*([a-z0-9-]+)/.exec(text)![1]!;
  const out = (sc.agents[agent] as any)({ text, agent });
  ctx.meter.record({ kind: "llm", agent, latencyMs: 0 }); ctx.chain.advance(); calls++;
  return call.schema.parse(out);
};
const N = 40;
for (let i = 0; i < 10; i++) await p.run(chestPainCase(`w${i}`), pipelineOptions(cfg, {}));
calls = 0;
import { Session } from "node:inspector/promises"; import fs from "node:fs"; const s = new Session(); s.connect(); await s.post("Profiler.enable"); await s.post("Profiler.start");
const c0 = process.cpuUsage(); const t0 = performance.now();
for (let i = 0; i < N; i++) await p.run(chestPainCase(`c${i}`), pipelineOptions(cfg, {}));
const u = process.cpuUsage(c0);
const { profile } = await s.post("Profiler.stop"); fs.writeFileSync("/tmp/run4.cpuprofile", JSON.stringify(profile));
console.log("no-transport: cpu/case ms", ((u.user + u.system) / 1000 / N).toFixed(2), "llm calls/case", calls / N, "wall/case", ((performance.now() - t0) / N).toFixed(1));
