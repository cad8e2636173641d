import type { Pathway } from "../../core/contracts/pathway.js";
import { seededIndex, seededShuffle } from "../probes/seeded.js";
import type { QuestionOrder, TurnSpec } from "./types.js";

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
  const shuffled = seededShuffle(turns, seed, `${itemId}\u0000ii`);
  if (order === "ii" || turns.length <= 2) return shuffled;
  return shuffled.slice(0, 2 + seededIndex(seed, `${itemId}\u0000ii-size`, turns.length - 1));
}
