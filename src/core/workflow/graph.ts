import { END, START, Send, StateGraph } from "@langchain/langgraph";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { PipelineState, type PipelineStateValue, type RefineTask, type RolloutTask } from "./state.js";
import type { WorkflowDeps } from "./run-context.js";
import { spendOf } from "./case-budget.js";
import { rolloutNode } from "./nodes/rollout.js";
import { buildEvidenceNode } from "./nodes/build-evidence.js";
import { answersByIndex, planRefinementNode } from "./nodes/plan-refinement.js";
import { clusterAnswersNode, type ClusterTask } from "./nodes/cluster-answers.js";
import { refinePathNode } from "./nodes/refine-path.js";
import { selectPathNode } from "./nodes/select-path.js";
import { composeReplyNode, wantsReply } from "./nodes/compose-reply.js";

/**
 * Wiring only (docs/architecture.md#house-style). Stage 1 rollouts (Send ×k) and evidence construction start
 * together from START; both join at plan-refinement, which fans out one refine branch
 * per distinct path (Send) and, beside them, one branch that clusters the rollout answers by
 * meaning; select-path assembles the result, and compose-reply writes the
 * verified reply of an open-ended question when the case asks for one.
 */

/**
 * START → k rollouts in parallel with evidence construction. In adaptive mode the rollouts
 * after the first round are sent too and wait for its outcome (adaptive-rounds.ts), so a
 * second round never waits for the evidence graph.
 */
export function routeStart(state: PipelineStateValue): Array<Send | "build-evidence"> {
  const rollouts = state.options.ablations.noExpansion ? 1 : state.options.k;
  return [...rolloutSends(state, Array.from({ length: rollouts }, (_, i) => i), 0), "build-evidence"];
}

function rolloutSends(state: PipelineStateValue, indices: number[], startDepth: number): Send[] {
  return indices.map((index) => new Send("rollout", { caseInput: state.caseInput, options: state.options, index, startDepth } satisfies RolloutTask));
}

/** After the join: refinement of each planned path, or straight to the result (or, for an old checkpoint, another adaptive round). */
export function routePlan(state: PipelineStateValue): Send[] | "select-path" {
  const joinDepth = Math.max(state.evidence?.depth ?? 0, ...state.rollouts.map((r) => r.depth));
  if (state.pendingRollouts.length > 0) return rolloutSends(state, state.pendingRollouts, joinDepth);
  if (state.plan.length === 0 || !state.evidence) return "select-path";
  const done = state.rollouts.filter((r) => !r.skipped);
  // The answers' clusters are made beside the refine branches: selection is the first to need them.
  const clustering = new Send("cluster-answers", { caseInput: state.caseInput, answers: answersByIndex(done), covers: done.map((r) => r.index).sort((a, b) => a - b), startDepth: joinDepth } satisfies ClusterTask);
  const refine = state.plan.map(
    (planned) =>
      new Send("refine-path", {
        caseInput: state.caseInput,
        options: state.options,
        planned,
        multiplicity: planned.rolloutIndices.length,
        evidence: state.evidence!.prompt ?? { graph: state.evidence!.graph },
        startDepth: joinDepth,
        spentBefore: spendOf([...state.rollouts.map((r) => r.usage), state.evidence!.usage]),
      } satisfies RefineTask),
  );
  return [...refine, clustering];
}

export function buildWorkflow(deps: WorkflowDeps, checkpointer?: BaseCheckpointSaver) {
  return new StateGraph(PipelineState)
    .addNode("rollout", rolloutNode(deps))
    .addNode("build-evidence", buildEvidenceNode(deps))
    .addNode("plan-refinement", planRefinementNode())
    .addNode("cluster-answers", clusterAnswersNode(deps))
    .addNode("refine-path", refinePathNode(deps))
    .addNode("select-path", selectPathNode(deps))
    .addConditionalEdges(START, routeStart, ["rollout", "build-evidence"])
    .addEdge("rollout", "plan-refinement")
    .addEdge("build-evidence", "plan-refinement")
    .addConditionalEdges("plan-refinement", routePlan, ["rollout", "refine-path", "cluster-answers", "select-path"])
    .addNode("compose-reply", composeReplyNode(deps))
    .addEdge("refine-path", "select-path")
    .addEdge("cluster-answers", "select-path")
    .addConditionalEdges("select-path", (state: PipelineStateValue) => (wantsReply(state) ? "compose-reply" : END), ["compose-reply", END])
    .addEdge("compose-reply", END)
    .compile({ checkpointer });
}

export type Workflow = ReturnType<typeof buildWorkflow>;
