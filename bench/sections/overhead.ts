import { z } from "zod";
import { ChatOpenAI } from "@langchain/openai";
import { AIMessage, HumanMessage, SystemMessage, type BaseMessage } from "@langchain/core/messages";
import { Pipeline, pipelineOptions } from "../../src/graph/pipeline.js";
import { buildMessages, type AgentDeps } from "../../src/agents/agent-context.js";
import { runRollout } from "../../src/agents/rollout.js";
import { PathOutput } from "../../src/agents/path-schema.js";
import { FairLimiter } from "../../src/llm/limiter.js";
import { LlmClient, type StructuredCall, type CallContext } from "../../src/llm/model-client.js";
import { PromptLibrary } from "../../src/llm/prompt-template.js";
import { textOf, type ChatMessage } from "../../src/llm/messages.js";
import { CallChain, UsageMeter } from "../../src/llm/usage.js";
import { TavilySearch } from "../../src/search/tavily.js";
import type { SearchProvider } from "../../src/search/search-provider.js";
import { defaultTavilyResults } from "../../test/support/scripted-tavily-server.js";
import type { BenchContext } from "../harness/context.js";
import { benchScenario, type BenchScenarioOptions } from "../harness/bench-scenario.js";
import { benchCase } from "../harness/cases.js";
import { cpuMsSince, percentile } from "../harness/stats.js";
import { fmt, table, type SectionReport } from "../harness/report.js";

export const TARGET_CPU_MS_PER_CALL = 1;
const SCENARIO: BenchScenarioOptions = { rolloutAnswers: ["A", "A", "B", "A", "C"], identicalReasoning: false, repairsNeeded: { A: 1, B: 1, C: 1 } };

/** The same messages as LangChain message objects, for the reference clients measured beside ours. */
function asLangChain(messages: ChatMessage[]): BaseMessage[] {
  return messages.map((m) => {
    if (m.role === "system") return new SystemMessage(textOf(m.content));
    if (m.role === "assistant") return new AIMessage(textOf(m.content));
    return new HumanMessage({ content: m.content });
  });
}

/** CPU per call of `fn`, run `n` times `par` at a time after a warm-up of as many calls. */
async function cpuPerCall(n: number, par: number, fn: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < n; i++) await fn();
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < n / par; i++) await Promise.all(Array.from({ length: par }, fn));
  return cpuMsSince(cpu0) / n;
}

/**
 * Orchestration overhead: CPU time of the pipeline process per model/search call with
 * L = 0, i.e. everything except waiting. The scripted servers run in a child process, so
 * their CPU is not in the figure (it is shown beside it).
 */
export async function overhead(ctx: BenchContext): Promise<SectionReport> {
  const started = Date.now();
  const n = ctx.quick ? 6 : 36;
  // A service runs for hours: the figure that matters is the steady state, after V8 has
  // compiled the hot paths. The first cases of a fresh process are measured as well and
  // reported beside it (cold), not hidden.
  const warmups = ctx.quick ? 5 : 60;
  const coldCases = 3;
  await ctx.servers.setLatency(0);
  await ctx.servers.setScenario(SCENARIO);
  const cfg = ctx.config();
  const pipeline = new Pipeline(cfg);
  const opts = pipelineOptions(cfg, { k: 5 });
  let coldCalls = 0;
  const coldCpu0 = process.cpuUsage();
  for (let i = 0; i < coldCases; i++) {
    const { result } = await pipeline.run(benchCase(`oh-cold-${i}`), opts);
    coldCalls += result.usage.llmCalls + result.usage.searchCalls;
  }
  const coldPerCall = cpuMsSince(coldCpu0) / coldCalls;
  for (let i = coldCases; i < warmups; i++) await pipeline.run(benchCase(`oh-warm-${i}`), opts);

  // 1. The whole pipeline, one case at a time, in batches: on a shared machine a burst of
  // other work (or a CPU frequency change) inflates one batch, so the median batch is the
  // figure and the spread is shown beside it.
  const batches = ctx.quick ? 2 : 9;
  const perBatch = Math.max(1, Math.round(n / batches));
  const batchPerCall: number[] = [];
  let calls = 0;
  let llmCalls = 0;
  const serverCpu0 = await ctx.servers.cpuMicros();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let b = 0; b < batches; b++) {
    const batchCpu0 = process.cpuUsage();
    let batchCalls = 0;
    for (let i = 0; i < perBatch; i++) {
      const { result } = await pipeline.run(benchCase(`oh-${b}-${i}`), opts);
      batchCalls += result.usage.llmCalls + result.usage.searchCalls;
      llmCalls += result.usage.llmCalls;
    }
    calls += batchCalls;
    batchPerCall.push(cpuMsSince(batchCpu0) / batchCalls);
  }
  const cases = batches * perBatch;
  const wall = performance.now() - t0;
  const cpu = cpuMsSince(cpu0);
  const serverCpu = ((await ctx.servers.cpuMicros()) - serverCpu0) / 1000;
  const perCall = percentile(batchPerCall, 50);
  ctx.log(`overhead: ${perCall.toFixed(2)} ms CPU per call (median of ${batches} batches of ${perBatch} cases; all: ${(cpu / calls).toFixed(2)})`);

  // 2. Where it goes: the same work in pieces.
  const prompts = new PromptLibrary();
  const c = benchCase("oh-parts");
  const meter = new UsageMeter();
  const callCtx = (): CallContext => ({ caseKey: "oh", meter, chain: new CallChain(meter) });
  const llm = new LlmClient(cfg.llm, new FairLimiter(1024));
  const deps: AgentDeps = { llm, prompts, search: pipeline.search };
  const m = ctx.quick ? 60 : 300;
  const rollout = () => runRollout(deps, callCtx(), { case: c, index: 0, k: 5, temperature: 0.7 });
  const clientNow = await cpuPerCall(m, 5, rollout);

  // For comparison in the same run: the ChatOpenAI that LlmClient wraps, bare (no retry,
  // limiter, validation or usage layers), through withStructuredOutput(zod) and with a
  // prebuilt response_format.
  const messages = asLangChain(buildMessages(deps, c, { agent: "rollout", schema: PathOutput, withImages: true, slots: { rolloutIndex: "1", k: "5", answerInstruction: "x" } }));
  const plain = new ChatOpenAI({ model: cfg.llm.models.executor!, temperature: 0.7, apiKey: "bench", maxRetries: 0, streaming: false, configuration: { baseURL: cfg.llm.baseUrl!, maxRetries: 0 } });
  const withSO = plain.withStructuredOutput(PathOutput, { name: "rollout", method: "jsonSchema", includeRaw: true });
  const signal = () => new AbortController().signal;
  const clientBefore = await cpuPerCall(m, 5, () => withSO.invoke(messages, { signal: signal() }));
  const format = { response_format: { type: "json_schema", json_schema: { name: "rollout", strict: true, schema: z.toJSONSchema(PathOutput) } } };
  const clientBuiltinFetch = await cpuPerCall(m, 5, () => plain.invoke(messages, { signal: signal(), ...format } as never));

  const tavily = new TavilySearch(cfg.search);
  const searchCpu = await cpuPerCall(m, 8, () => tavily.search("relationship between finding 1 and finding 2", { maxResults: 3 }));

  // 3. The pipeline with the model and search answered in-process (no HTTP at all): the
  // workflow, agents, evidence graph and scoring alone. The scripted clinician's own
  // functions run in this process here, so this slightly over-states the pipeline's part.
  const stubScenario = benchScenario(SCENARIO);
  const stubSearch: SearchProvider = { name: "tavily", enabled: true, search: async (q) => ({ query: q, results: defaultTavilyResults(q), retrievedAt: new Date().toISOString() }) };
  const stubbed = new Pipeline(cfg, { search: stubSearch });
  let stubCalls = 0;
  // Replaces the model client's one entry point; everything above it runs unchanged.
  stubbed.llm.structured = (async (call: StructuredCall<z.ZodType>, cctx: CallContext) => {
    const text = call.messages.map((x) => textOf(x.content)).join("\n");
    const agent = /medmmv-agent:\s*([a-z0-9-]+)/.exec(text)?.[1] ?? "unknown";
    const script = stubScenario.agents[agent] as (req: unknown) => unknown;
    const out = script({ agent, text, messages: call.messages, images: [], callIndex: 0, globalIndex: 0, body: {}, temperature: call.temperature, model: "stub", mode: "content", toolName: null, signal: new AbortController().signal });
    cctx.meter.record({ kind: "llm", agent: call.agent, latencyMs: 0 });
    cctx.chain.advance();
    stubCalls++;
    return call.schema.parse(out);
  }) as typeof stubbed.llm.structured;
  for (let i = 0; i < warmups; i++) await stubbed.run(benchCase(`oh-stub-warm-${i}`), opts);
  stubCalls = 0;
  let stubSearchCalls = 0;
  const stubCpu0 = process.cpuUsage();
  for (let i = 0; i < n; i++) stubSearchCalls += (await stubbed.run(benchCase(`oh-stub-${i}`), opts)).result.usage.searchCalls;
  const stubCpu = cpuMsSince(stubCpu0);
  const stubPerCall = stubCpu / (stubCalls + stubSearchCalls);

  const verdicts = [{ target: `orchestration overhead ≤ ${TARGET_CPU_MS_PER_CALL} ms CPU per call (L = 0)`, measured: `${fmt(perCall, 2)} ms (cold: ${fmt(coldPerCall, 2)} ms)`, met: perCall <= TARGET_CPU_MS_PER_CALL }];
  const body = [
    `${cases} cases one after another (${batches} batches of ${perBatch}) with L = 0, after ${warmups} warm-up cases in the same process (the steady state of a running service); the first ${coldCases} cases of the fresh process are reported as "cold". Each case: k = 5 distinct paths, each repaired once, the long case with one image, 8 search pairs — ${fmt(calls / cases, 0)} calls per case (${fmt(llmCalls / cases, 0)} model calls, ${fmt((calls - llmCalls) / cases, 0)} searches). CPU is \`process.cpuUsage()\` of the pipeline process (user + system, all its threads); the scripted servers run in a child process and their CPU is measured there and shown separately, not included.`,
    "",
    table(
      ["measure", "value"],
      [
        ["pipeline CPU per call (model + search calls), steady state, median batch", `**${fmt(perCall, 2)} ms**`],
        [`the same over the first ${coldCases} cases of the fresh process (cold: V8 still compiling)`, `${fmt(coldPerCall, 2)} ms`],
        ["the batches (CPU per call of each)", batchPerCall.map((x) => `${fmt(x, 2)}`).join(" · ") + " ms"],
        ["all batches together", `${fmt(cpu / calls, 2)} ms`],
        ["pipeline CPU per case", `${fmt(cpu / cases, 0)} ms`],
        ["wall per case (L = 0)", `${fmt(wall / cases, 0)} ms`],
        ["scripted servers' CPU per call (child process, not included above)", `${fmt(serverCpu / calls, 2)} ms`],
      ],
    ),
    "",
    "Where it goes (each row measured on its own in this run; per call, CPU of this process):",
    "",
    table(
      ["piece", "CPU per call"],
      [
        ["one rollout call through `LlmClient.structured` (prompt with the image, 5 in parallel): ChatOpenAI withStructuredOutput inside LlmClient's retry, limiter, zod validation and usage — the current client", `${fmt(clientNow, 2)} ms`],
        ["the same request through bare `ChatOpenAI.invoke` with a prebuilt response_format (OpenAI SDK, built-in fetch; no LlmClient layers)", `${fmt(clientBuiltinFetch, 2)} ms`],
        ["the same request through bare `withStructuredOutput(zod)` (no LlmClient layers)", `${fmt(clientBefore, 2)} ms`],
        ["one web search through `TavilySearch` (same transport, 8 in parallel)", `${fmt(searchCpu, 2)} ms`],
        ["the pipeline with model and search answered in-process, no HTTP (LangGraph, agents, evidence graph, scoring)", `${fmt(stubPerCall, 2)} ms`],
      ],
    ),
    "",
    `Reading: about ${fmt(stubPerCall, 2)} ms per call is the LangGraph workflow and the agents around the calls (the in-process row; a CPU profile puts the largest part of it in LangGraph's and @langchain/core's per-task bookkeeping — a LangSmith \`RunTree\` is built for every runnable step even with tracing off — then the evidence graph and prompt building), and the rest is the calls themselves: building and serialising the request, HTTP, parsing and validating the reply, retry, limiter and usage bookkeeping. The model client is LangChain's \`ChatOpenAI\` (OpenAI SDK, built-in fetch) inside LlmClient's layers; bare \`ChatOpenAI\` on the same request, measured in this run, costs ${fmt(clientBuiltinFetch / clientNow, 1)}× of it per call (${fmt(clientBefore / clientNow, 1)}× through \`withStructuredOutput\`).`,
  ].join("\n");
  return { id: "overhead", title: "Orchestration overhead", command: `npm run bench -- --only overhead${ctx.argsNote}`, body, verdicts, seconds: (Date.now() - started) / 1000 };
}
