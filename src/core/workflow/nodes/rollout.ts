import type { RunnableConfig } from "@langchain/core/runnables";
import { runRollout } from "../../agents/rollout.js";
import { describeError } from "../../contracts/errors.js";
import { UsageMeter } from "../../llm/usage.js";
import { nodeCallContext, type WorkflowDeps } from "../run-context.js";
import type { PipelineStateUpdate, RolloutRecord, RolloutTask } from "../state.js";
import { ADAPTIVE_FIRST_ROUND } from "../adaptive-rounds.js";
import { clusterAnswers } from "../answer-clustering.js";
import type { PathOutput } from "../../contracts/reasoning-path.js";

/**
 * One rollout branch (Send). Errors are caught here and returned as a record: a throwing
 * node would abort its siblings' signal (LangGraph PR #1022) and sink the whole case.
 */
export function rolloutNode(deps: WorkflowDeps) {
  return async (task: RolloutTask, config: RunnableConfig): Promise<PipelineStateUpdate> => {
    const started = Date.now();
    const threadId = config.configurable?.thread_id as string | undefined;
    const adaptive = task.options.adaptive && !task.options.ablations.noExpansion && threadId !== undefined;
    const c = deps.images.hydrate(task.caseInput);
    let startDepth = task.startDepth;
    if (adaptive && task.index >= ADAPTIVE_FIRST_ROUND) {
      // Second adaptive round: run only if the first round disagreed (adaptive-rounds.ts).
      const round = await deps.rounds.decision(threadId, config.signal);
      if (round.settled) return { rollouts: [{ index: task.index, path: null, skipped: true, usage: new UsageMeter(deps.prices).snapshot(0), depth: startDepth }] };
      startDepth = Math.max(startDepth, round.depth);
    }
    const ctx = nodeCallContext(deps, config, task.caseInput.id, startDepth);
    // Let the evidence agents of the same superstep send first. The rollouts' replies are
    // not needed before the evidence graph's (plan-refinement joins both), but the image
    // and text doctors' are the first links of the longer chain: replies are read in the
    // order they were asked for, and one queued behind five rollouts waits for their CPU.
    // (After nodeCallContext, which lifts the run signal's listener limit for the superstep.)
    // undici writes a request on an idle keep-alive socket one event-loop turn after it is
    // dispatched (docs/architecture.md, "On the wire"), so all seven leave together; what this
    // orders is the CPU: the evidence agents' requests are built, and their replies read, first.
    if (task.startDepth === 0) await new Promise<void>((resolve) => setImmediate(resolve));
    const emit = deps.hooks.emitter(config);
    // The first round's answers decide the second round by meaning: the rollout that completes
    // the round asks the equivalence judge when the rules leave them apart (one call, remembered
    // for the case's final clustering, nodes/cluster-answers.ts), then tells the waiting rollouts.
    const reportRound = async (answer: PathOutput["answer"] | null) => {
      if (!adaptive || task.index >= ADAPTIVE_FIRST_ROUND) return;
      const round = deps.rounds.report(threadId, task.index, answer, ctx.chain.depth);
      if (!round) return;
      try {
        const { clusters } = await clusterAnswers(deps.agents, ctx, c, round.answers, deps.clusterings.memo(threadId));
        const agreed = round.answers.every((a) => a !== null) && clusters.length === 1;
        deps.rounds.settle(threadId, agreed ? { settled: true } : { settled: false, depth: Math.max(round.depth, ctx.chain.depth) });
      } finally {
        deps.rounds.settle(threadId, { settled: false, depth: Math.max(round.depth, ctx.chain.depth) });
      }
    };
    const model = deps.agents.llm.rolloutModel(task.index);
    let record: RolloutRecord;
    try {
      const path = await runRollout(deps.agents, ctx, {
        model,
        case: c,
        index: task.index,
        k: task.options.k,
        temperature: task.options.rolloutTemperature,
      });
      emit("rollout", { index: task.index, answer: path.answer.option ?? path.answer.text.slice(0, 80), steps: path.steps.length });
      await reportRound(path.answer);
      record = { index: task.index, path, model, usage: ctx.meter.snapshot(Date.now() - started), depth: ctx.chain.depth };
    } catch (err) {
      const error = describeError(err);
      emit("branch-failed", { branch: `rollout-${task.index}`, ...error });
      await reportRound(null);
      record = { index: task.index, path: null, model, error, usage: ctx.meter.snapshot(Date.now() - started), depth: ctx.chain.depth };
    }
    return { rollouts: [record] };
  };
}
