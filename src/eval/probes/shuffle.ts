import type { EvalItem } from "../datasets/types.js";
import { letterAt } from "../datasets/common.js";
import { seededShuffle } from "./seeded.js";
import type { PermutationRecord } from "./types.js";

/**
 * N orders of an item's option letters (each order lists the dataset's letters in the
 * order they are presented). Orders are cyclic rotations of a seeded shuffle, a fresh
 * shuffle for every full cycle: within a cycle each option sits in each position once,
 * so a position bias (always the first option) shows as inconsistency, not as luck.
 */
export function permutationOrders(letters: readonly string[], seed: number, baseId: string, n: number): string[][] {
  const sorted = [...letters].sort();
  const m = sorted.length;
  const orders: string[][] = [];
  let base: string[] = [];
  for (let k = 0; k < n; k++) {
    if (k % m === 0) base = seededShuffle(sorted, seed, `${baseId}\u0000shuffle\u0000${k / m}`);
    const offset = k % m;
    orders.push([...base.slice(offset), ...base.slice(0, offset)]);
  }
  return orders;
}

/** The item with its options presented in `order` and re-lettered A, B, C…; the gold letter follows its option. */
export function permuteItem(item: EvalItem, order: readonly string[], index: number, of: number): EvalItem & { probe: { permutation: PermutationRecord } } {
  const options = item.case.options ?? {};
  const letters: Record<string, string> = {};
  const presented: Record<string, string> = {};
  order.forEach((orig, i) => {
    letters[letterAt(i)] = orig;
    presented[letterAt(i)] = options[orig]!;
  });
  const goldLetter = Object.keys(letters).find((l) => letters[l] === item.gold.option);
  // A question that spells out its lettered options itself (a generic JSONL file, say) keeps the old order there.
  const listed = Object.entries(options).filter(([l, t]) => item.case.question.includes(`(${l}) ${t}`)).length;
  const warnings = listed >= 2 ? [...(item.warnings ?? []), "the question text lists the lettered options itself, in the original order: the shuffled options contradict it"] : item.warnings;
  return {
    ...item,
    ...(warnings ? { warnings } : {}),
    id: `${item.id}#p${index}`,
    // Case ids allow "." but not "#"; the pipeline keys its thread on this.
    case: { ...item.case, ...(item.case.id ? { id: `${item.case.id}.p${index}` } : {}), options: presented },
    gold: { ...item.gold, ...(goldLetter ? { option: goldLetter } : {}) },
    probe: { ...item.probe, permutation: { index, of, baseId: item.id, letters } },
  };
}
