import http from "node:http";
import { startBenchServers } from "./harness/servers.js";
import { testConfig } from "../test/support/test-config.js";
import { chestPainCase } from "../test/support/sample-cases.js";
import { PromptLibrary } from "../src/llm/prompt-template.js";
import { NoSearch } from "../src/search/search-provider.js";
import { buildMessages } from "../src/agents/agent-context.js";
import { PathOutput } from "../src/agents/path-schema.js";
import { FairLimiter } from "../src/llm/limiter.js";
import { LlmClient } from "../src/llm/model-client.js";
const srv = await startBenchServers();
await srv.setScenario({ rolloutAnswers: ["B"] });
const cfg = testConfig(srv.modelBaseUrl);
const deps = { llm: new LlmClient(cfg.llm, new FairLimiter(256)), prompts: new PromptLibrary(), search: new NoSearch() };
async function measure(name: string, n: number, par: number, fn: () => Promise<unknown>) {
  for (let i = 0; i < 30; i++) await fn();
  const c0 = process.cpuUsage(); const t0 = performance.now();
  for (let i = 0; i < n / par; i++) await Promise.all(Array.from({ length: par }, fn));
  const u = process.cpuUsage(c0);
  console.log(name.padEnd(34), "cpu/call ms", ((u.user + u.system) / 1000 / n).toFixed(3), "wall/call", ((performance.now() - t0) / n).toFixed(3));
}
const msgs = buildMessages(deps, chestPainCase(), { agent: "rollout", slots: { rolloutIndex: "1", k: "5", answerInstruction: "x" }, schema: PathOutput, withImages: true });
const body = JSON.stringify({ model: "m", messages: msgs, temperature: 0.7, response_format: { type: "json_object" } });
const url = srv.modelBaseUrl + "/chat/completions";
await measure("global fetch", 400, 5, async () => { const r = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body }); return r.json(); });
const agent = new http.Agent({ keepAlive: true });
function httpFetch(input: string, init: { method: string; headers: Record<string, string>; body: string }): Promise<Response> {
  const u = new URL(input);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, path: u.pathname + u.search, method: init.method, agent, headers: init.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (d: Buffer) => chunks.push(d));
      res.on("end", () => { const h = new Headers(); for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) h.set(k, Array.isArray(v) ? v.join(", ") : v); resolve(new Response(Buffer.concat(chunks), { status: res.statusCode, headers: h })); });
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(init.body);
  });
}
await measure("http + new Response", 400, 5, async () => { const r = await httpFetch(url, { method: "POST", headers: { "content-type": "application/json" }, body }); return r.json(); });
await measure("http raw", 400, 5, () => new Promise((res, rej) => { const u = new URL(url); const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, method: "POST", agent, headers: { "content-type": "application/json" } }, (r) => { const ch: Buffer[] = []; r.on("data", (d) => ch.push(d)); r.on("end", () => res(JSON.parse(Buffer.concat(ch).toString()))); }); req.on("error", rej); req.end(body); }));
await srv.close();
