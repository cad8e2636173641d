import type { AnswerCluster, AnswerLike } from "./answer-clusters.js";

/** One diagnosis of the ranked differential (DiagnosisResult.differential). */
export interface DifferentialEntry {
  rank: number;
  /** The cluster's canonical wording (with its option letter for multiple choice). */
  answer: AnswerLike;
  wordings: string[];
  /** Rollouts whose answer is in this cluster, of those that produced an answer. */
  rollouts: number;
  of: number;
  share: number;
  /** The best CU of a scored path whose final answer is in this cluster (null: none scored). */
  bestCu: number | null;
  /** Index into candidates of the path behind bestCu. */
  candidateIndex: number | null;
  /** Clusters key (stability.clusters[].key). */
  cluster: string;
  code?: { system: string; code: string; display: string };
}

export interface DifferentialCandidate {
  cluster: string | null;
  cu: number | null;
  answer: AnswerLike | null;
}

/**
 * The clusters ranked: the selected answer's cluster first (the result's answer is rank 1,
 * whatever selected it), then by rollouts in the cluster, then by best CU, then by the
 * first rollout. A repaired path's answer that no rollout gave is a cluster of its own with
 * 0 rollouts. `optionText` gives the text of an option letter (multiple choice).
 */
export function rankDifferential(
  clusters: readonly AnswerCluster[],
  candidates: readonly DifferentialCandidate[],
  selected: string | null,
  optionText: (letter: string) => string,
): DifferentialEntry[] {
  const of = clusters.reduce((n, c) => n + c.rollouts.length, 0);
  const rows = clusters.map((c) => ({ cluster: c.key, canonical: c.canonical, option: c.rule === "option", wordings: [...c.wordings], rollouts: c.rollouts.length, first: c.rollouts[0] ?? Infinity }));
  for (const cand of candidates) {
    if (cand.cluster === null || !cand.answer || rows.some((r) => r.cluster === cand.cluster)) continue;
    const option = cand.answer.option !== null && cand.answer.option !== "";
    const wording = option ? cand.answer.option! : cand.answer.text.trim();
    rows.push({ cluster: cand.cluster, canonical: wording, option, wordings: [wording], rollouts: 0, first: Infinity });
  }
  const entries = rows.map((r) => {
    let bestCu: number | null = null;
    let candidateIndex: number | null = null;
    candidates.forEach((cand, i) => {
      if (cand.cluster !== r.cluster || cand.cu === null) return;
      if (bestCu === null || cand.cu > bestCu) {
        bestCu = cand.cu;
        candidateIndex = i;
      }
    });
    const answer: AnswerLike = r.option ? { option: r.canonical, text: optionText(r.canonical) } : { option: null, text: r.canonical };
    return { r, entry: { rank: 0, answer, wordings: r.wordings, rollouts: r.rollouts, of, share: of === 0 ? 0 : r.rollouts / of, bestCu, candidateIndex, cluster: r.cluster } as DifferentialEntry };
  });
  entries.sort(
    (a, b) =>
      Number(b.r.cluster === selected) - Number(a.r.cluster === selected) ||
      b.r.rollouts - a.r.rollouts ||
      (b.entry.bestCu ?? -Infinity) - (a.entry.bestCu ?? -Infinity) ||
      a.r.first - b.r.first,
  );
  return entries.map(({ entry }, i) => ({ ...entry, rank: i + 1 }));
}
