import type { ResultRecord } from "../results-file.js";
import type { HypothesisKind } from "./types.js";

/** summary.json `robustness` (docs/evaluation.md#robustness-probes); fields a probe did not run are null. */
export interface RobustnessSummary {
  hypothesis: HypothesisKind | null;
  shuffleOptions: number | null;
  /** Records that carried a probe. */
  records: number;
  /** Correct / probed records, pooled over runs (failed and abstained count as wrong). */
  accuracy: number | null;
  /** Share of hypothesis records answered with the hypothesised option. */
  agreesWithHypothesis: number | null;
  /** The same share for a wrong hypothesis (-w only): how often the model went along with it. */
  agreesWithWrong: number | null;
  accuracyPerPermutation: Array<{ permutation: number; n: number; correct: number; accuracy: number }> | null;
  /** (item, run) groups with a record for every permutation: what consistency and flipRate are over. */
  permutationGroups: number;
  /** Groups missing a permutation (an unfinished run). */
  incompleteGroups: number;
  /** Share of groups that chose the same option (by text) in every permutation; no answer agrees with nothing. */
  consistency: number | null;
  /** Mean over groups of the share of permutation pairs whose chosen options differ. */
  flipRate: number | null;
}

/** The dataset option a record chose (the same text whatever letter it was shown under), or null. */
export function chosenOption(r: Pick<ResultRecord, "answer" | "permutation">): string | null {
  const letter = r.answer?.option;
  if (!letter) return null;
  return r.permutation ? (r.permutation.letters[letter] ?? null) : letter;
}

const share = (k: number, n: number): number | null => (n === 0 ? null : k / n);

/** Robustness numbers from the records alone; null for a run without probes. */
export function computeRobustness(records: readonly ResultRecord[]): RobustnessSummary | null {
  const probed = records.filter((r) => r.hypothesis || r.permutation);
  if (probed.length === 0) return null;
  const withH = probed.filter((r) => r.hypothesis);
  const agree = withH.filter((r) => r.answer?.option === r.hypothesis!.option).length;
  const kinds = [...new Set(withH.map((r) => r.hypothesis!.kind))];
  const hypothesis = kinds.length === 1 ? kinds[0]! : null;
  const wrong = withH.filter((r) => r.hypothesis!.kind.endsWith("-w"));

  const permuted = probed.filter((r) => r.permutation);
  const of = permuted.length ? Math.max(...permuted.map((r) => r.permutation!.of)) : null;
  let accuracyPerPermutation: RobustnessSummary["accuracyPerPermutation"] = null;
  let consistency: number | null = null;
  let flipRate: number | null = null;
  let groups = 0;
  let incomplete = 0;
  if (of !== null) {
    accuracyPerPermutation = Array.from({ length: of }, (_, i) => {
      const rs = permuted.filter((r) => r.permutation!.index === i + 1);
      const correct = rs.filter((r) => r.correct).length;
      return { permutation: i + 1, n: rs.length, correct, accuracy: rs.length ? correct / rs.length : 0 };
    });
    const byGroup = new Map<string, Map<number, string | null>>();
    for (const r of permuted) {
      const key = `${r.run}\u0000${r.permutation!.baseId}`;
      const g = byGroup.get(key) ?? byGroup.set(key, new Map()).get(key)!;
      g.set(r.permutation!.index, chosenOption(r));
    }
    let consistent = 0;
    let flips = 0;
    for (const g of byGroup.values()) {
      if (g.size < of) {
        incomplete++;
        continue;
      }
      groups++;
      const chosen = [...g.values()];
      if (chosen[0] !== null && chosen.every((c) => c === chosen[0])) consistent++;
      let differ = 0;
      let pairs = 0;
      for (let i = 0; i < chosen.length; i++)
        for (let j = i + 1; j < chosen.length; j++) {
          pairs++;
          if (chosen[i] === null || chosen[i] !== chosen[j]) differ++;
        }
      if (pairs) flips += differ / pairs;
    }
    // One order is not a comparison: consistency and flips need two or more.
    if (of >= 2) {
      consistency = share(consistent, groups);
      flipRate = share(flips, groups);
    }
  }

  return {
    hypothesis,
    shuffleOptions: of,
    records: probed.length,
    accuracy: share(probed.filter((r) => r.correct).length, probed.length),
    agreesWithHypothesis: share(agree, withH.length),
    agreesWithWrong: share(wrong.filter((r) => r.answer?.option === r.hypothesis!.option).length, wrong.length),
    accuracyPerPermutation,
    permutationGroups: groups,
    incompleteGroups: incomplete,
    consistency,
    flipRate,
  };
}
