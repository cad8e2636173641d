import type { Pathway } from "../../pathways/schema.js";
import type { QuestionOrder, TurnSpec } from "./types.js";

/** A small seeded PRNG (mulberry32): the same seed and item give the same improvised order. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function hash(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
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
  const rand = prng(seed ^ hash(itemId));
  return turns.map(() => turns[Math.floor(rand() * turns.length)]!);
}
