import type { EvalItem } from "../datasets/types.js";
import { CONFIRMATION_TEMPLATES, RATIONALISATION_TEMPLATES, renderTemplate } from "./hypothesis-templates.js";
import { seededIndex } from "./seeded.js";
import type { HypothesisKind, HypothesisRecord } from "./types.js";

/**
 * Where the statement is kept on the case (metadata is never rendered into prompts), so
 * answer extraction can ignore the model quoting it back.
 */
export const HYPOTHESIS_METADATA_KEY = "probeHypothesis";

/**
 * The item with a clinician's statement before its question: the gold option for -r, for
 * -w another option drawn from (seed, item). Draws are made on the dataset's letters and
 * keyed by the dataset item, so every permutation, method and run of an item hears the
 * same wrong option (by text) in the same template.
 */
export function withHypothesis(item: EvalItem, kind: HypothesisKind, seed: number): EvalItem & { probe: { hypothesis: HypothesisRecord } } {
  const options = item.case.options ?? {};
  const perm = item.probe?.permutation;
  const baseId = perm?.baseId ?? item.id;
  // Presented letter → dataset letter (identity without a shuffle).
  const toOrig = perm?.letters ?? Object.fromEntries(Object.keys(options).map((l) => [l, l]));
  const goldOrig = toOrig[item.gold.option!]!;
  let chosenOrig = goldOrig;
  if (kind.endsWith("-w")) {
    const others = Object.values(toOrig).filter((l) => l !== goldOrig).sort();
    chosenOrig = others[seededIndex(seed, `${baseId}\u0000hypothesis-wrong`, others.length)]!;
  }
  const letter = Object.keys(toOrig).find((l) => toOrig[l] === chosenOrig)!;
  const family = kind.startsWith("cq") ? CONFIRMATION_TEMPLATES : RATIONALISATION_TEMPLATES;
  // Keyed by the family, not the kind: -r and -w of an item use the same wording.
  const template = family[seededIndex(seed, `${baseId}\u0000hypothesis-template\u0000${kind.slice(0, 2)}`, family.length)]!;
  const statement = renderTemplate(template, letter, options[letter]!);
  return {
    ...item,
    case: { ...item.case, question: `${statement}\n\n${item.case.question}`, metadata: { ...item.case.metadata, [HYPOTHESIS_METADATA_KEY]: statement } },
    probe: { ...item.probe, hypothesis: { kind, option: letter, template: template.id } },
  };
}

/** The clinician statements a case carries (none outside a probe run). */
export function hypothesisStatements(c: { metadata?: Record<string, unknown> }): string[] {
  const s = c.metadata?.[HYPOTHESIS_METADATA_KEY];
  return typeof s === "string" && s !== "" ? [s] : [];
}
