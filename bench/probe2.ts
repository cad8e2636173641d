import http from "node:http";
import { startBenchServers } from "./harness/servers.js";
import { testConfig } from "../test/support/test-config.js";
import { chestPainCase } from "../test/support/sample-cases.js";
import { FairLimiter } from "../src/llm/limiter.js";
import { LlmClient } from "../src/llm/model-client.js";
import { PromptLibrary } from "../src/llm/prompt-template.js";
import { NoSearch } from "../src/search/search-provider.js";
import { CallChain, UsageMeter } from "../src/llm/usage.js";
import { runRollout } from "../src/agents/rollout.js";
import { buildMessages } from "../src/agents/agent-context.js";
import { PathOutput } from "../src/agents/path-schema.js";

const srv = await startBenchServers();
await srv.setScenario({ rolloutAnswers: ["B"] });
const cfg = testConfig(srv.modelBaseUrl, { MEDMMV_MAX_CONCURRENCY: "256" });
const llm = new LlmClient(cfg.llm, new FairLimiter(256));
const deps = { llm, prompts: new PromptLibrary(), search: new NoSearch() };
const c = chestPainCase();
async function measure(name: string, n: number, par: number, fn: () => Promise<unknown>) {
  for (let i = 0; i < 20; i++) await fn();
  const c0 = process.cpuUsage(); const t0 = performance.now();
  for (let i = 0; i < n / par; i++) await Promise.all(Array.from({ length: par }, fn));
  const u = process.cpuUsage(c0);
  console.log(name.padEnd(30), "cpu/call ms", ((u.user + u.system) / 1000 / n).toFixed(3), "wall/call", ((performance.now() - t0) / n).toFixed(3));
}
const meter = new UsageMeter();
const ctx = () => ({ caseKey: "x", meter, chain: new CallChain(meter) });
await measure("runRollout (LlmClient)", 300, 5, () => runRollout(deps, ctx(), { case: c, index: 0, k: 5, temperature: 0.7 }));
await measure("buildMessages", 2000, 1, async () => buildMessages(deps, c, { agent: "rollout", slots: { rolloutIndex: "1", k: "5", answerInstruction: "x" }, schema: PathOutput, withImages: true }));
const msgs = buildMessages(deps, c, { agent: "rollout", slots: { rolloutIndex: "1", k: "5", answerInstruction: "x" }, schema: PathOutput, withImages: true });
const body = JSON.stringify({ model: "m", messages: msgs, temperature: 0.7, response_format: { type: "json_object" } });
await measure("raw fetch", 300, 5, async () => { const r = await fetch(srv.modelBaseUrl + "/chat/completions", { method: "POST", headers: { "content-type": "application/json", authorization: "Bearer x" }, body }); return JSON.parse(await r.text()); });
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
const u = new URL(srv.modelBaseUrl + "/chat/completions");
await measure("node:http keepalive", 300, 5, () => new Promise((res, rej) => {
  const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, method: "POST", agent, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) } }, (r) => { const ch: Buffer[] = []; r.on("data", (d) => ch.push(d)); r.on("end", () => res(JSON.parse(Buffer.concat(ch).toString()))); });
  req.on("error", rej); req.end(body);
}));
await srv.close();
