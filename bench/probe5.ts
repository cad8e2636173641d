import http from "node:http";
import fs from "node:fs";
import { testConfig } from "../test/support/test-config.js";
import { chestPainCase } from "../test/support/sample-cases.js";
import { PromptLibrary } from "../src/llm/prompt-template.js";
import { NoSearch } from "../src/search/search-provider.js";
import { FairLimiter } from "../src/llm/limiter.js";
import { LlmClient } from "../src/llm/model-client.js";
import { CallChain, UsageMeter } from "../src/llm/usage.js";
import { runRollout } from "../src/agents/rollout.js";
const bodies: unknown[] = [];
const srv = http.createServer((req, res) => { let b = ""; req.on("data", (d) => (b += d)); req.on("end", () => { const j = JSON.parse(b); bodies.push(j);
  const tool = j.tools ? true : false;
  const content = JSON.stringify({ steps: [{ text: "t", stage: "reasoning", claims: ["c"] }], answer: { option: "B", text: "x" }, summary: "s" });
  const msg = tool ? { role: "assistant", content: null, tool_calls: [{ id: "1", type: "function", function: { name: j.tools[0].function.name, arguments: content } }] } : { role: "assistant", content };
  res.setHeader("content-type", "application/json"); res.end(JSON.stringify({ id: "x", object: "chat.completion", created: 1, model: j.model, choices: [{ index: 0, message: msg, finish_reason: tool ? "tool_calls" : "stop" }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } })); }); });
await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
const port = (srv.address() as any).port;
for (const method of ["jsonSchema", "functionCalling", "jsonMode"]) {
  const cfg = testConfig(`http://127.0.0.1:${port}/v1`, { MEDMMV_STRUCTURED_OUTPUT: method });
  const llm = new LlmClient(cfg.llm, new FairLimiter(4));
  const meter = new UsageMeter();
  const out = await runRollout({ llm, prompts: new PromptLibrary(), search: new NoSearch() }, { caseKey: "x", meter, chain: new CallChain(meter) }, { case: chestPainCase(), index: 0, k: 5, temperature: 0.7 });
  console.log(method, out.answer, meter.snapshot(0).promptTokens);
}
fs.writeFileSync(process.argv[2]!, JSON.stringify(bodies.map((b: any) => ({ ...b, messages: b.messages.length })), null, 1));
srv.close();
