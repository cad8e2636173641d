import type { EvalItem } from "../datasets/types.js";

/**
 * `--open`: a multiple-choice item asked as clinicians ask, without its options; the gold
 * option's text is the reference the equivalence judge compares the answer with. Items
 * without options (VQA-RAD, PathVQA open questions) are left as they are: the same matcher
 * grades their open answers.
 */
export function openEndedItem(item: EvalItem): EvalItem {
  if (item.gold.kind !== "choice" || !item.case.options || Object.keys(item.case.options).length === 0) return item;
  const { options: _hidden, ...rest } = item.case;
  return { ...item, case: rest, gold: { kind: "open", text: item.gold.text }, strata: { ...item.strata, open: "options hidden" } };
}
