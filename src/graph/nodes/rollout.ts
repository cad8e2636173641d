import type { RunnableConfig } from "@langchain/core/runnables";
import { runRollout } from "../../agents/rollout.js";
import { describeError } from "../../errors.js";
import { nodeCallContext, type WorkflowDeps } from "../run-context.js";
import type { PipelineStateUpdate, RolloutTask } from "../state.js";

/**
 * One rollout branch (Send). Errors are caught here and returned as a record: a throwing
 * node would abort its siblings' signal (LangGraph PR #1022) and sink the whole case.
 */
export function rolloutNode(deps: WorkflowDeps) {
  return async (task: RolloutTask, config: RunnableConfig): Promise<PipelineStateUpdate> => {
    const started = Date.now();
    const ctx = nodeCallContext(deps, config, task.caseInput.id, task.startDepth);
    const emit = deps.hooks.emitter(config);
    try {
      const path = await runRollout(deps.agents, ctx, {
        case: deps.images.hydrate(task.caseInput),
        index: task.index,
        k: task.options.k,
        temperature: task.options.rolloutTemperature,
      });
      emit("rollout", { index: task.index, answer: path.answer.option ?? path.answer.text.slice(0, 80), steps: path.steps.length });
      return { rollouts: [{ index: task.index, path, usage: ctx.meter.snapshot(Date.now() - started), depth: ctx.chain.depth }] };
    } catch (err) {
      const error = describeError(err);
      emit("branch-failed", { branch: `rollout-${task.index}`, ...error });
      return { rollouts: [{ index: task.index, path: null, error, usage: ctx.meter.snapshot(Date.now() - started), depth: ctx.chain.depth }] };
    }
  };
}
