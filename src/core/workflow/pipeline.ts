import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import type { Config } from "../config.js";
import type { PreparedCase } from "../contracts/clinical-case.js";
import type { DiagnosisResult } from "../contracts/diagnosis-result.js";
import { MedmmvError } from "../contracts/errors.js";
import { FairLimiter } from "../llm/limiter.js";
import { LlmClient, type LlmClientOptions, type ResponseCache } from "../llm/model-client.js";
import { PromptLibrary } from "../llm/prompt-template.js";
import type { SearchProvider } from "../search/search-provider.js";
import { createSearchProvider } from "../search/create-search-provider.js";
import { VERSION } from "../version.js";
import type { Workflow } from "./graph.js";
import { RunHooks, type EmitEvent } from "./run-context.js";
import { ImageVault } from "../intake/image-vault.js";
import { AdaptiveRounds } from "./adaptive-rounds.js";
import { AnswerClusterings } from "./answer-clustering.js";
import { ValueSetCoder } from "../terminology/valueset-expand.js";
import type { PipelineOptions } from "./state.js";
import { CaseSpending, assertBudgetPriced } from "./case-budget.js";
import { ImageDescriptions } from "../agents/image-description.js";

export type PipelineOverrides = Partial<Omit<PipelineOptions, "ablations">> & { ablations?: Partial<PipelineOptions["ablations"]> };

/** A case's options: the request's (or flag's) overrides over config. A cost budget without prices is INVALID_INPUT. */
export function pipelineOptions(config: Config, o: PipelineOverrides = {}): PipelineOptions {
  const budget = o.budget ?? config.pipeline.caseBudget;
  assertBudgetPriced(config, budget);
  return {
    k: o.k ?? config.pipeline.k,
    maxRepairs: o.maxRepairs ?? config.pipeline.maxRepairs,
    weights: o.weights ?? config.pipeline.weights,
    rolloutTemperature: o.rolloutTemperature ?? config.llm.rolloutTemperature,
    maxSearchPairs: o.maxSearchPairs ?? config.search.maxPairs,
    adaptive: o.adaptive ?? config.pipeline.adaptive,
    dedupe: o.dedupe ?? true,
    select: o.select ?? "cu",
    composeReply: o.composeReply ?? config.pipeline.composeReply ?? false,
    seed: o.seed ?? 1,
    ablations: { noExpansion: false, noHd: false, noTextDoctor: false, noImageDoctor: false, noWebSearch: false, ...o.ablations },
    budget,
  };
}

export interface PipelineRun {
  result: DiagnosisResult;
  /** The full evidence graph E (graphology export), stored beside the result. */
  fullEvidenceGraph: Record<string, unknown> | null;
}

export interface PipelineDeps {
  cache?: ResponseCache | null;
  checkpointer?: BaseCheckpointSaver;
  search?: SearchProvider;
  limiter?: FairLimiter;
  /**
   * For a program that embeds the pipeline: its own LangChain chat model per role (any
   * `BaseChatModel`, or a factory per temperature) and callback handlers for every model run.
   */
  chatModels?: LlmClientOptions["chatModels"];
  callbacks?: LlmClientOptions["callbacks"];
  /** The prompt templates (default: prompts/ as shipped); an eval's reference-comparable variant passes its own. */
  prompts?: PromptLibrary;
  /**
   * Whose response cache a case's calls share: the service answers the case's owner, so one
   * tenant's cached replies never answer (or reveal) another's. Unset, every run shares one
   * cache: an eval run or a command line, where one person owns every case.
   */
  cacheScope?: (caseId: string) => Promise<string | null>;
}

/**
 * The MedMMV pipeline for one process: clients, prompts and the compiled workflow are
 * built once (compiling per case grows the heap, langgraphjs #1746) and shared by cases.
 */
export class Pipeline {
  /**
   * The compiled workflow, made on the first run (or by ready()). It brings LangGraph and every
   * agent node, and an eval of another method (chain of thought, self-consistency, stage-wise)
   * uses this pipeline's clients, prompts and limiter without ever running it.
   */
  #workflow: Promise<Workflow> | null = null;
  readonly #checkpointer: BaseCheckpointSaver | undefined;
  readonly hooks = new RunHooks();
  readonly images: ImageVault;
  readonly rounds = new AdaptiveRounds();
  readonly clusterings = new AnswerClusterings();
  readonly terminology: ValueSetCoder | null;
  readonly spending = new CaseSpending();
  /** Each running case's description of its images for text-only models, made once (image-description.ts). */
  readonly imageDescriptions = new ImageDescriptions();
  readonly limiter: FairLimiter;
  readonly llm: LlmClient;
  readonly prompts: PromptLibrary;
  readonly search: SearchProvider;
  readonly #cacheScope: ((caseId: string) => Promise<string | null>) | null;

  constructor(
    readonly config: Config,
    deps: PipelineDeps = {},
  ) {
    this.images = new ImageVault({ modelLongSide: config.images.modelLongSide, maxPixels: config.http.maxImagePixels });
    this.limiter = deps.limiter ?? new FairLimiter(config.llm.maxConcurrency);
    this.#cacheScope = deps.cacheScope ?? null;
    this.llm = new LlmClient(config.llm, this.limiter, deps.cache ?? null, { chatModels: deps.chatModels, callbacks: deps.callbacks });
    this.prompts = deps.prompts ?? new PromptLibrary();
    this.search = deps.search ?? createSearchProvider(config);
    this.#checkpointer = deps.checkpointer;
    const t = config.terminology;
    this.terminology = t?.url ? new ValueSetCoder({ url: t.url, valueSet: t.valueSet, timeoutMs: t.timeoutMs }) : null;
  }

  /** Load and compile the workflow now (a server at start, so its first case does not wait for it). */
  async ready(): Promise<void> {
    await this.#compiled();
  }

  #compiled(): Promise<Workflow> {
    this.#workflow ??= import("./graph.js")
      .then(({ buildWorkflow }) =>
        buildWorkflow(
          { agents: { llm: this.llm, prompts: this.prompts, search: this.search, imageDescriptions: this.imageDescriptions }, prompts: this.prompts, prices: this.config.llm.prices, hooks: this.hooks, images: this.images, rounds: this.rounds, clusterings: this.clusterings, terminology: this.terminology, spending: this.spending, version: VERSION },
          this.#checkpointer,
        ),
      )
      .catch((err: unknown) => {
        // A load or compile that failed is tried again by the next run rather than failing every later one.
        this.#workflow = null;
        throw err;
      });
    return this.#workflow;
  }

  /** Run a case from the start (or, with a checkpointer and `resume`, continue its thread). */
  async run(c: PreparedCase, options: PipelineOptions, run: { signal?: AbortSignal; emit?: EmitEvent; resume?: boolean } = {}): Promise<PipelineRun> {
    const threadId = c.id;
    // A scope that cannot be found is the case's own: no sharing rather than the shared cache.
    const cacheScope = this.#cacheScope ? ((await this.#cacheScope(threadId).catch(() => null)) ?? `case:${threadId}`) : undefined;
    this.hooks.set(threadId, { emit: run.emit ?? (() => undefined), cacheScope });
    this.rounds.open(threadId, { resumed: run.resume === true });
    this.clusterings.open(threadId);
    this.spending.open(threadId);
    this.imageDescriptions.openCase(threadId);
    try {
      const workflow = await this.#compiled();
      const held = await this.images.hold(c);
      const input = run.resume ? null : { caseInput: held, options, startedAt: new Date().toISOString() };
      // A resumed thread whose checkpoint is gone (or never written) starts over.
      let useInput = input;
      if (run.resume) {
        const snapshot = await workflow.getState({ configurable: { thread_id: threadId } }).catch(() => null);
        if (!snapshot || !snapshot.values || !(snapshot.values as { caseInput?: unknown }).caseInput)
          useInput = { caseInput: held, options, startedAt: new Date().toISOString() };
      }
      const state = await workflow.invoke(useInput, { configurable: { thread_id: threadId }, signal: run.signal, recursionLimit: 50 });
      const result = state.result;
      if (!result) throw new MedmmvError("PIPELINE_FAILED", "the workflow ended without a result");
      return { result, fullEvidenceGraph: state.evidence?.graph ?? null };
    } catch (err) {
      if (run.signal?.aborted) throw new MedmmvError("ABORTED", "case cancelled", { cause: err });
      throw err;
    } finally {
      this.hooks.delete(threadId);
      this.rounds.close(threadId);
      this.clusterings.close(threadId);
      this.spending.close(threadId);
      this.imageDescriptions.closeCase(threadId);
      this.images.release(threadId);
    }
  }
}
