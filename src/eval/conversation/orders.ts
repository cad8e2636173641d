import type { Pathway } from "../../core/contracts/pathway.js";
import { rank } from "../sampling.js";
import type { QuestionOrder, TurnSpec } from "./types.js";

/** Draw i of an item's improvised order in [0, 1): --sample's seeded rank of (item, i), so it depends on nothing else. */
function draw(seed: number, itemId: string, i: number): number {
  return parseInt(rank(seed, `${itemId}\u0000${i}`).slice(0, 12), 16) / 2 ** 48;
}

/** A seeded permutation of 0…n-1 (Fisher–Yates on the item's own draws). */
function permutation(n: number, seed: number, itemId: string): number[] {
  const order = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(draw(seed, itemId, i) * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  return order;
}

/**
 * The turns of one conversation in a question order (Dr-LLaVA App. C and its scripts):
 * `si` as the dataset gives them; `df` the whole sequence reversed, so the diagnosis comes
 * first and image quality last; `ii` every question once in a seeded random order;
 * `ii-sample` 2 to all of them, without replacement, in a seeded random order. Seeded by
 * `seed` and the item id, so every method and run of an item walks the same order.
 */
export function orderTurns(turns: readonly TurnSpec[], order: QuestionOrder, _pathway: Pathway, seed: number, itemId: string): TurnSpec[] {
  if (order === "si") return [...turns];
  if (order === "df") return [...turns].reverse();
  const shuffled = permutation(turns.length, seed, itemId).map((i) => turns[i]!);
  if (order === "ii" || turns.length <= 2) return shuffled;
  const size = 2 + Math.floor(draw(seed, `${itemId}\u0000size`, 0) * (turns.length - 1));
  return shuffled.slice(0, size);
}
