import type { AgentDeps } from "../core/agents/agent-context.js";
import type { Config } from "../core/config.js";
import { LlmClient, type ResponseCache } from "../core/llm/model-client.js";
import type { SearchProvider } from "../core/search/search-provider.js";
import { pipelineOptions, type Pipeline, type PipelineOverrides } from "../core/workflow/pipeline.js";
import type { PipelineOptions } from "../core/workflow/state.js";
import { cotMethod } from "./methods/cot.js";
import { medmmvMethod } from "./methods/medmmv.js";
import { selfConsistencyMethod } from "./methods/self-consistency.js";
import type { EvalMethod, MethodName } from "./methods/types.js";
import { referencePromptLibrary } from "./probes/reference-prompts.js";
import { runPipelines } from "./run-cache.js";
import { stageJudgeMethod } from "./stagewise/stage-judge-method.js";
import { stagewiseMethod, type StagewiseOptions } from "./stagewise/stagewise-method.js";
import { rubricGradedMethod } from "./healthbench/grading-method.js";
import { openMatchedMethod } from "./open/open-match-method.js";
import { CallCollector } from "./call-log.js";

/** The run settings that decide how an item is answered: the same in the runner and in its item processes. */
export interface ItemMethodSettings {
  dataset: string;
  method: MethodName;
  pipeline?: PipelineOverrides;
  stagewise: StagewiseOptions;
  stageJudge?: boolean;
  hypothesisWarning?: boolean;
  saveResults?: boolean;
  /** --open: open answers graded by meaning against the gold text (src/eval/open/). */
  open?: boolean;
}

export interface ItemMethods {
  /** The pipeline options every run starts from (each run adds its index to the seed). */
  popts: PipelineOptions;
  /** Run r's pipeline: its own view of the response cache, one limiter for all. */
  pipelineFor(run: number): Pipeline;
  /** How run r answers an item. */
  methodFor(run: number): EvalMethod;
}

/**
 * The answering side of an eval: one pipeline per run (each with its run's namespace of the
 * response cache), and the method the settings name on top of it. Built the same way by the
 * runner and by each of its item processes (`--workers`), so an item is answered the same
 * wherever it runs.
 */
export function itemMethods(s: ItemMethodSettings, config: Config, deps: { cache: ResponseCache | null; cacheScope: string; search: SearchProvider }): ItemMethods {
  const popts = pipelineOptions(config, s.pipeline);
  const { search } = deps;
  // --hypothesis-warning off: the prompts as Dr-LLaVA's reference words them (no "a claim to check").
  const prompts = s.hypothesisWarning === false ? { prompts: referencePromptLibrary() } : {};
  // Every reply's raw text, reported model and fingerprint, kept on the item's record (call-log.ts).
  const collector = new CallCollector();
  const pipelineFor = runPipelines(config, deps.cache, deps.cacheScope, { search, ...prompts, callbacks: [collector] });
  const pipeline = pipelineFor(0);
  const agentDepsFor = (run: number): AgentDeps => ({ llm: pipelineFor(run).llm, prompts: pipeline.prompts, search });
  // Self-consistency samples one prompt k times: a response cache would hand back the first sample k times.
  const scDeps: AgentDeps = { ...agentDepsFor(0), llm: new LlmClient(config.llm, pipeline.limiter, null, pipeline.llm.clientOptions) };
  const prices = config.llm.prices;
  const sw = s.stagewise;
  const answerMethodFor = (run: number): EvalMethod => {
    const agentDeps = agentDepsFor(run);
    if (s.method === "stagewise") return stagewiseMethod(agentDeps, prices, sw);
    if (s.stageJudge) return stageJudgeMethod(s.method === "cot" ? cotMethod(agentDeps, prices, { staged: true }) : medmmvMethod(pipelineFor(run), { ...popts, seed: popts.seed + run }, { steps: true, keepDiagnosis: s.saveResults }), agentDeps, prices, { letterShortcut: sw.letterShortcut });
    if (s.method === "cot") return cotMethod(agentDeps, prices);
    if (s.method === "self-consistency") return selfConsistencyMethod(scDeps, prices, { k: popts.k, temperature: popts.rolloutTemperature });
    // Each run its own seed, so `--select random` draws afresh per run. HealthBench grades the
    // reply a person reads: the composed, verified one.
    return medmmvMethod(pipelineFor(run), { ...popts, seed: popts.seed + run, ...(s.dataset === "healthbench" ? { composeReply: true } : {}) }, { keepDiagnosis: s.saveResults });
  };
  // HealthBench: every reply is graded against its item's rubric (src/eval/healthbench/).
  const gradedFor = (run: number): EvalMethod => {
    if (s.dataset === "healthbench") return rubricGradedMethod(answerMethodFor(run), agentDepsFor(run), prices);
    return s.open ? openMatchedMethod(answerMethodFor(run), agentDepsFor(run), prices) : answerMethodFor(run);
  };
  const methodFor = (run: number): EvalMethod => {
    const m = gradedFor(run);
    return {
      ...m,
      async run(c, signal, context) {
        try {
          const out = await m.run(c, signal, context);
          const { calls, callsNotKept } = collector.take(c.id);
          return { ...out, calls, ...(callsNotKept ? { callsNotKept } : {}) };
        } catch (err) {
          collector.take(c.id);
          throw err;
        }
      },
    };
  };
  return { popts, pipelineFor, methodFor };
}
