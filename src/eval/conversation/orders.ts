import type { Pathway } from "../../core/contracts/pathway.js";
import { rank } from "../sampling.js";
import type { QuestionOrder, TurnSpec } from "./types.js";

/** Draw i of an item's improvised order in [0, 1): --sample's seeded rank of (item, i), so it depends on nothing else. */
function draw(seed: number, itemId: string, i: number): number {
  return parseInt(rank(seed, `${itemId}\u0000${i}`).slice(0, 12), 16) / 2 ** 48;
}

/**
 * The turns of one conversation in a question order (Dr-LLaVA App. C): `si` as the dataset
 * gives them; `df` the pathway's last (diagnosis) step first, then the rest in order; `ii`
 * as many turns drawn uniformly with replacement, seeded by `seed` and the item id.
 */
export function orderTurns(turns: readonly TurnSpec[], order: QuestionOrder, pathway: Pathway, seed: number, itemId: string): TurnSpec[] {
  if (order === "si") return [...turns];
  if (order === "df") {
    const diagnosis = pathway.steps.at(-1)!.id;
    return [...turns.filter((t) => t.step === diagnosis), ...turns.filter((t) => t.step !== diagnosis)];
  }
  return turns.map((_, i) => turns[Math.floor(draw(seed, itemId, i) * turns.length)]!);
}
