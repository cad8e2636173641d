import type { CuScores } from "../contracts/diagnosis-result.js";
import { MedmmvError } from "../contracts/errors.js";

/** Inputs of CU for one final path (docs/architecture.md#scores). */
export interface CuParts {
  /** Claims of the final path judged `supported` against the evidence graph. */
  supported: number;
  /** All claims of the final path. */
  totalClaims: number;
  /** Coherence judge score; clamped to [0, 1]. */
  coherence: number;
  /** Repairs the path went through. */
  repairs: number;
  /** The repair budget (config maxRepairs). */
  maxRepairs: number;
}

/** [w_e, w_c, w_r]. */
export type CuWeights = readonly [number, number, number];
export const DEFAULT_CU_WEIGHTS: CuWeights = [1, 1, 1];

/** CU values this close count as equal, so 2/3-style float noise does not decide a tie. */
const TIE_EPSILON = 1e-9;

function requireCount(value: number, name: string): void {
  if (!Number.isFinite(value) || value < 0) throw new MedmmvError("INVALID_INPUT", `${name} must be a finite number ≥ 0`);
}

const clamp01 = (x: number): number => Math.min(1, Math.max(0, x));

/**
 * CU(p) = w_e·S_evidence + w_c·S_coherence − w_r·P_repair, with S_evidence = supported /
 * totalClaims (0 for a path with no claims: nothing was verified), S_coherence clamped to
 * [0,1], P_repair = repairs / maxRepairs clamped to [0,1] (0 when no repairs are allowed).
 */
export function computeCu(parts: CuParts, weights: CuWeights = DEFAULT_CU_WEIGHTS): CuScores {
  requireCount(parts.supported, "supported");
  requireCount(parts.totalClaims, "totalClaims");
  requireCount(parts.repairs, "repairs");
  requireCount(parts.maxRepairs, "maxRepairs");
  if (parts.supported > parts.totalClaims) {
    throw new MedmmvError("INVALID_INPUT", "supported claims cannot exceed total claims");
  }
  if (!Number.isFinite(parts.coherence)) throw new MedmmvError("INVALID_INPUT", "coherence must be a finite number");
  if (weights.length !== 3 || weights.some((w) => !Number.isFinite(w) || w < 0)) {
    throw new MedmmvError("INVALID_INPUT", "CU weights must be three finite numbers ≥ 0");
  }
  const [we, wc, wr] = weights;
  const evidence = parts.totalClaims === 0 ? 0 : parts.supported / parts.totalClaims;
  const coherence = clamp01(parts.coherence);
  const repairPenalty = parts.maxRepairs === 0 ? 0 : clamp01(parts.repairs / parts.maxRepairs);
  return { evidence, coherence, repairPenalty, cu: we * evidence + wc * coherence - wr * repairPenalty };
}

/** A final path as the selector sees it; `cu` is null for a path that failed. */
export interface ScoredCandidate {
  index: number;
  answer: string | null;
  cu: number | null;
}

function scored(candidates: readonly ScoredCandidate[]): Array<ScoredCandidate & { cu: number }> {
  return candidates.filter((c): c is ScoredCandidate & { cu: number } => {
    if (c.cu === null) return false;
    if (!Number.isFinite(c.cu)) throw new MedmmvError("INVALID_INPUT", `candidate ${c.index} has a non-finite CU`);
    return true;
  });
}

/**
 * The `index` of the candidate with the highest CU. Ties (within 1e-9): the answer held by
 * more scored final paths wins, then the lower index. Failed candidates (cu null) never win;
 * null when every candidate failed or there are none.
 */
export function selectBest(candidates: readonly ScoredCandidate[]): number | null {
  const live = scored(candidates);
  if (live.length === 0) return null;
  const votes = new Map<string, number>();
  for (const c of live) if (c.answer !== null) votes.set(c.answer, (votes.get(c.answer) ?? 0) + 1);
  const heldBy = (c: ScoredCandidate): number => (c.answer === null ? 0 : (votes.get(c.answer) ?? 0));
  let best = live[0]!;
  for (const c of live.slice(1)) {
    if (c.cu > best.cu + TIE_EPSILON) best = c;
    else if (Math.abs(c.cu - best.cu) <= TIE_EPSILON) {
      const h = heldBy(c) - heldBy(best);
      if (h > 0 || (h === 0 && c.index < best.index)) best = c;
    }
  }
  return best.index;
}

/**
 * Σ max(CU,0) over scored paths answering `selectedAnswer` ÷ Σ max(CU,0) over all scored paths.
 * Null when there is no selected answer or the denominator is 0 (no positive CU anywhere).
 */
export function answerSupport(candidates: readonly ScoredCandidate[], selectedAnswer: string | null): number | null {
  if (selectedAnswer === null) return null;
  let all = 0;
  let same = 0;
  for (const c of scored(candidates)) {
    const w = Math.max(c.cu, 0);
    all += w;
    if (c.answer === selectedAnswer) same += w;
  }
  return all === 0 ? null : same / all;
}
