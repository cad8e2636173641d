import type { RunnableConfig } from "@langchain/core/runnables";
import type { AnswerLike } from "../../scoring/answer-clusters.js";
import type { CaseInState } from "../../intake/image-vault.js";
import { clusterAnswers, type AnswerClusterRecord } from "../answer-clustering.js";
import { nodeCallContext, type WorkflowDeps } from "../run-context.js";
import type { PipelineStateUpdate } from "../state.js";

/** What the answer-clustering branch receives through Send. */
export interface ClusterTask {
  caseInput: CaseInState;
  /** The rollouts' answers by rollout index (null: failed), and the indices that ran. */
  answers: Array<AnswerLike | null>;
  covers: number[];
  startDepth: number;
}

/**
 * The rollout answers clustered by meaning (answer-clustering.ts), as one branch sent beside
 * the refine branches: its judge call (at most one; none when the rules merge everything, or when
 * an agreeing adaptive first round was already judged) runs while the paths are being checked,
 * so it never lengthens the critical path — a refine branch is at least two calls long.
 */
export function clusterAnswersNode(deps: WorkflowDeps) {
  return async (task: ClusterTask, config: RunnableConfig): Promise<PipelineStateUpdate> => {
    return { answerClusters: await clusterRecord(deps, config, task) };
  };
}

/** The clusters of a task's answers, with the judge call's usage and the chain depth it ended at. */
export async function clusterRecord(deps: WorkflowDeps, config: RunnableConfig, task: ClusterTask): Promise<AnswerClusterRecord> {
  const started = Date.now();
  const threadId = config.configurable?.thread_id as string | undefined;
  const ctx = nodeCallContext(deps, config, task.caseInput.id, task.startDepth);
  const { clusters, judge } = await clusterAnswers(deps.agents, ctx, deps.images.hydrate(task.caseInput), task.answers, deps.clusterings.memo(threadId));
  const usage = ctx.meter.snapshot(Date.now() - started);
  return { covers: task.covers, clusters, judge, usage: usage.llmCalls > 0 ? usage : null, depth: ctx.chain.depth };
}
