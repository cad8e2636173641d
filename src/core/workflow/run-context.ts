import { setMaxListeners } from "node:events";
import type { RunnableConfig } from "@langchain/core/runnables";
import type { Prices } from "../config.js";
import { CallChain, UsageMeter } from "../llm/usage.js";
import type { CallContext } from "../llm/model-client.js";
import type { AgentDeps } from "../agents/agent-context.js";
import type { PromptLibrary } from "../llm/prompt-template.js";
import type { ImageVault } from "../intake/image-vault.js";
import type { AdaptiveRounds } from "./adaptive-rounds.js";
import type { AnswerClusterings } from "./answer-clustering.js";
import type { ValueSetCoder } from "../terminology/valueset-expand.js";
import type { CaseSpending } from "./case-budget.js";

/** A pipeline event, as streamed to SSE subscribers and stored in the case history. */
export type PipelineEventType = "rollout" | "evidence" | "hd-verdict" | "repair" | "path-scored" | "scores" | "final" | "branch-failed";
export type EmitEvent = (type: PipelineEventType, data: Record<string, unknown>) => void;

/**
 * Per-case hooks (event sink) kept outside the checkpointed state: they are not data and
 * must not be serialised. Looked up by thread id, which is the case id.
 */
export class RunHooks {
  private readonly byThread = new Map<string, { emit: EmitEvent; cacheScope?: string }>();
  set(threadId: string, hooks: { emit: EmitEvent; cacheScope?: string }): void {
    this.byThread.set(threadId, hooks);
  }
  delete(threadId: string): void {
    this.byThread.delete(threadId);
  }
  emitter(config: RunnableConfig): EmitEvent {
    const id = config.configurable?.thread_id as string | undefined;
    return (id && this.byThread.get(id)?.emit) || (() => undefined);
  }
  /** The response-cache scope of the run (PipelineDeps.cacheScope); undefined: the shared cache. */
  cacheScope(config: RunnableConfig): string | undefined {
    const id = config.configurable?.thread_id as string | undefined;
    return id ? this.byThread.get(id)?.cacheScope : undefined;
  }
}

/** Everything the nodes need, injected when the workflow is built (never built inside a node). */
export interface WorkflowDeps {
  agents: AgentDeps;
  prompts: PromptLibrary;
  prices: Prices;
  hooks: RunHooks;
  /** Image bytes, kept out of the checkpointed state. */
  images: ImageVault;
  /** Coordination of the adaptive rounds of running cases (in memory, like hooks). */
  rounds: AdaptiveRounds;
  /** The equivalence judge's verdicts per running case, reused by the final clustering (in memory, like rounds). */
  clusterings: AnswerClusterings;
  /** The terminology server the differential is coded against (MEDMMV_TERMINOLOGY_URL); null: no coding. */
  terminology: ValueSetCoder | null;
  /** What each running case's refine branches have spent so far (for its budget). */
  spending: CaseSpending;
  version: string;
}

/** A fresh meter and call chain for one node run; the node returns the meter's snapshot. */
export function nodeCallContext(
  deps: WorkflowDeps,
  config: RunnableConfig,
  caseId: string,
  startDepth: number,
  opts: { countSpending?: boolean } = {},
): CallContext & { meter: UsageMeter } {
  // Every task of a superstep (k rollouts, m refinements) listens on this one run signal
  // for as long as it runs: more than ten at once is by design, not a leak (docs/architecture.md#known-pitfalls).
  if (config.signal) setMaxListeners(0, config.signal);
  const meter = new UsageMeter(deps.prices, opts.countSpending ? (tokens, costUsd) => deps.spending.add(caseId, tokens, costUsd) : undefined);
  return { caseKey: caseId, meter, chain: new CallChain(meter, startDepth), signal: config.signal, cacheScope: deps.hooks.cacheScope(config) };
}
