import type { PathOutput } from "../../contracts/reasoning-path.js";
import type { PipelineStateUpdate, PipelineStateValue, PlannedPath } from "../state.js";
import { firstRoundSettled } from "../adaptive-rounds.js";

export function answerKey(p: PathOutput | null): string | null {
  if (!p) return null;
  return p.answer.option ?? (p.answer.text.trim().toLowerCase().replace(/[^\p{L}\p{N} ]/gu, "").replace(/\s+/g, " ") || null);
}

/** Identity of a path for de-duplication: same answer and the same reasoning, modulo case/space. */
function pathSignature(p: PathOutput): string {
  const norm = (s: string) => s.toLowerCase().replace(/\s+/g, " ").trim();
  return JSON.stringify([answerKey(p), p.steps.map((s) => [s.stage, norm(s.text), s.claims.map(norm)])]);
}

/**
 * Join point after the rollouts and the evidence graph. Decides whether an adaptive run
 * needs another round of rollouts, and otherwise which distinct paths get refined.
 */
export function planRefinementNode() {
  return async (state: PipelineStateValue): Promise<PipelineStateUpdate> => {
    const opts = state.options;
    const done = state.rollouts.filter((r) => !r.skipped).sort((a, b) => a.index - b.index);
    // Settled: the first adaptive round agreed (entropy and RGM 0), so more samples or more
    // paths with the same answer cannot change the selected answer: the second round stood
    // down, and one path for that answer is refined (counted with the multiplicity of every
    // rollout holding it).
    let settled = false;
    if (opts.adaptive && !opts.ablations.noExpansion && done.length < opts.k) {
      settled = firstRoundSettled(done.map((r) => answerKey(r.path)));
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
      const sig = settled ? `answer:${answerKey(r.path)}` : opts.dedupe ? pathSignature(r.path) : `#${r.index}`;
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
