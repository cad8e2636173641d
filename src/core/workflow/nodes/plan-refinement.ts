import type { PathOutput } from "../../contracts/reasoning-path.js";
import type { AnswerClusterRecord } from "../answer-clustering.js";
import { buildClusters, ClusterIndex, lexicalKey, ruleGroups } from "../../scoring/answer-clusters.js";
import type { PipelineStateUpdate, PipelineStateValue, PlannedPath, RolloutRecord } from "../state.js";
import { firstRoundSettled } from "../adaptive-rounds.js";

/** A path's answer by its letter or its lexical key (stability.lexical); clusters compare meaning. */
export function answerKey(p: PathOutput | null): string | null {
  return lexicalKey(p?.answer ?? null);
}

/** Identity of a path for de-duplication: same answer (by the merge rules) and the same reasoning, modulo case/space. */
function pathSignature(p: PathOutput, answer: string | null): string {
  const norm = (s: string) => s.toLowerCase().replace(/\s+/g, " ").trim();
  return JSON.stringify([answer, p.steps.map((s) => [s.stage, norm(s.text), s.claims.map(norm)])]);
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

/** The rollouts' answers grouped by the merge rules alone (no model call): what refinement is planned by. */
export function ruleIndexOf(rollouts: readonly RolloutRecord[]): ClusterIndex {
  const answers = answersByIndex(rollouts);
  return new ClusterIndex(buildClusters(answers, ruleGroups(answers), null), answers);
}

/**
 * Join point after the rollouts and the evidence graph. Decides whether an adaptive run
 * needs another round of rollouts, and otherwise which distinct paths get refined. Paths are
 * grouped by the merge rules here; the equivalence judge's clusters are made beside
 * refinement (nodes/cluster-answers.ts) and used from selection on.
 */
export function planRefinementNode() {
  return async (state: PipelineStateValue): Promise<PipelineStateUpdate> => {
    const opts = state.options;
    const done = state.rollouts.filter((r) => !r.skipped).sort((a, b) => a.index - b.index);
    const index = ruleIndexOf(done);
    // Settled: the first adaptive round agreed (by meaning: the rollout completing it asked the
    // judge), so the second round stood down; more paths with the same answer cannot change the
    // selected answer, and one path for it is refined (counted with the multiplicity of every
    // rollout holding it).
    let settled = false;
    if (opts.adaptive && !opts.ablations.noExpansion && done.length < opts.k) {
      settled = state.rollouts.some((r) => r.skipped) || firstRoundSettled(done.map((r) => index.keyOf(r.path?.answer ?? null)));
      // A checkpoint written before all rollouts were sent at START: sample the rest now.
      if (!settled && !state.rollouts.some((r) => r.skipped)) {
        const remaining = Array.from({ length: opts.k - done.length }, (_, i) => done.length + i);
        return { pendingRollouts: remaining };
      }
    }
    const plan: PlannedPath[] = [];
    const bySignature = new Map<string, PlannedPath>();
    for (const r of done) {
      if (!r.path) continue;
      const sig = settled ? "answer:settled" : opts.dedupe ? pathSignature(r.path, index.keyOf(r.path.answer)) : `#${r.index}`;
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
    return { plan: opts.ablations.noExpansion ? plan.slice(0, 1) : plan, pendingRollouts: [] };
  };
}
