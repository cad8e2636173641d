import type { RunnableConfig } from "@langchain/core/runnables";
import type { PathOutput } from "../../contracts/reasoning-path.js";
import type { AnswerClusterRecord } from "../answer-clustering.js";
import { clusterAnswers } from "../answer-clustering.js";
import { ClusterIndex, lexicalKey } from "../../scoring/answer-clusters.js";
import { nodeCallContext, type WorkflowDeps } from "../run-context.js";
import type { PipelineStateUpdate, PipelineStateValue, PlannedPath, RolloutRecord } from "../state.js";
import { firstRoundSettled } from "../adaptive-rounds.js";

/** A path's answer by its letter or its lexical key (stability.lexical); clusters compare meaning. */
export function answerKey(p: PathOutput | null): string | null {
  return lexicalKey(p?.answer ?? null);
}

/** Identity of a path for de-duplication: same answer cluster and the same reasoning, modulo case/space. */
function pathSignature(p: PathOutput, cluster: string | null): string {
  const norm = (s: string) => s.toLowerCase().replace(/\s+/g, " ").trim();
  return JSON.stringify([cluster, p.steps.map((s) => [s.stage, norm(s.text), s.claims.map(norm)])]);
}

/** The rollouts' answers by rollout index (null for a failed rollout or an index with none). */
export function answersByIndex(rollouts: readonly Pick<RolloutRecord, "index" | "path">[]): Array<PathOutput["answer"] | null> {
  const answers: Array<PathOutput["answer"] | null> = Array.from({ length: Math.max(0, ...rollouts.map((r) => r.index + 1)) }, () => null);
  for (const r of rollouts) answers[r.index] = r.path?.answer ?? null;
  return answers;
}

/** The index of the clusters of `record`, read against the rollouts it covers. */
export function clusterIndexOf(record: AnswerClusterRecord, rollouts: readonly RolloutRecord[]): ClusterIndex {
  return new ClusterIndex(record.clusters, answersByIndex(rollouts));
}

/** The clusters the rollout branches left in the state, when they cover exactly the rollouts that ran. */
function currentClusters(state: PipelineStateValue, done: readonly RolloutRecord[]): AnswerClusterRecord | null {
  const record = state.answerClusters;
  if (!record) return null;
  const ran = done.map((r) => r.index);
  return record.covers.length === ran.length && record.covers.every((i, at) => i === ran[at]) ? record : null;
}

/**
 * Join point after the rollouts and the evidence graph. Decides whether an adaptive run
 * needs another round of rollouts, and otherwise which distinct paths get refined.
 */
export function planRefinementNode(deps: WorkflowDeps) {
  return async (state: PipelineStateValue, config: RunnableConfig): Promise<PipelineStateUpdate> => {
    const opts = state.options;
    const done = state.rollouts.filter((r) => !r.skipped).sort((a, b) => a.index - b.index);
    // The rollout branch that ended last clustered the answers; a case resumed from a
    // checkpoint (its rollouts ended in another process) clusters them here.
    let record = currentClusters(state, done);
    if (!record) {
      const joinDepth = Math.max(state.evidence?.depth ?? 0, ...done.map((r) => r.depth));
      const ctx = nodeCallContext(deps, config, state.caseInput.id, joinDepth);
      const threadId = config.configurable?.thread_id as string | undefined;
      const { clusters, judge } = await clusterAnswers(deps.agents, ctx, deps.images.hydrate(state.caseInput), answersByIndex(done), deps.clusterings.memo(threadId));
      const usage = ctx.meter.snapshot(0);
      record = { covers: done.map((r) => r.index), clusters, judge, usage: usage.llmCalls > 0 ? usage : null, depth: ctx.chain.depth };
    }
    const index = clusterIndexOf(record, done);
    // Settled: the first adaptive round agreed (entropy and RGM 0 over clusters), so more
    // samples or more paths with the same answer cannot change the selected answer: the second
    // round stood down, and one path for that answer is refined (counted with the
    // multiplicity of every rollout holding it).
    let settled = false;
    if (opts.adaptive && !opts.ablations.noExpansion && done.length < opts.k) {
      settled = firstRoundSettled(done.map((r) => index.keyOf(r.path?.answer ?? null)));
      // A checkpoint written before all rollouts were sent at START: sample the rest now.
      if (!settled && !state.rollouts.some((r) => r.skipped)) {
        const remaining = Array.from({ length: opts.k - done.length }, (_, i) => done.length + i);
        return { pendingRollouts: remaining, answerClusters: record };
      }
    }
    const plan: PlannedPath[] = [];
    const bySignature = new Map<string, PlannedPath>();
    for (const r of done) {
      if (!r.path) continue;
      const cluster = index.keyOf(r.path.answer);
      const sig = settled ? `answer:${cluster}` : opts.dedupe ? pathSignature(r.path, cluster) : `#${r.index}`;
      const existing = bySignature.get(sig);
      if (existing) {
        existing.rolloutIndices.push(r.index);
        continue;
      }
      const p: PlannedPath = { pathId: `path-${r.index + 1}`, rolloutIndices: [r.index], path: r.path };
      bySignature.set(sig, p);
      plan.push(p);
    }
    // --no-expansion: a single path, still refined (paper Table 5).
    return { plan: opts.ablations.noExpansion ? plan.slice(0, 1) : plan, pendingRollouts: [], answerClusters: record };
  };
}
