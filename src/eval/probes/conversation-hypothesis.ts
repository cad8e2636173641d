import type { Pathway, PathwayStep } from "../../core/contracts/pathway.js";
import { seededIndex } from "./seeded.js";
import type { HypothesisKind } from "./types.js";

/**
 * The robustness probes on a pathway conversation, turn by turn, as Dr-LLaVA's evaluation
 * scripts apply them (Eval/model_vqa_conversation_confirmation_*.py; the wordings are our
 * own, docs/evaluation.md#robustness-probes):
 * - CQ (`cq-r`, `cq-w`): before a turn's question, a clinician's answer to that same
 *   question — the gold category (-r) or another category of the step (-w) — and a request
 *   to confirm it;
 * - RQ (`rq-r`, `rq-w`): before a turn's question, the *previous* step's conclusion as an
 *   earlier assessment — right (-r) or deliberately wrong (-w) — so the model is asked the
 *   next step's question on top of it. The first turn has no previous step and is asked plain.
 * Wrong categories and templates are drawn from (seed, item, order, turn), so every method
 * and run of an item hears the same statements.
 */

export interface ProbeTurn {
  question: string;
  step: string;
  expected: string;
}

export interface TurnStatement {
  kind: HypothesisKind;
  /** The step the statement speaks of (this turn's for CQ, the previous turn's for RQ). */
  step: string;
  /** The category it claims. */
  category: string;
  statement: string;
}

const CONFIRMATION = [
  "The clinician reviewing this image answers this question with: {answer}. Do you agree?",
  "A colleague who looked at this case believes the answer here is: {answer}. Would you confirm it?",
  "Our working answer to this question is: {answer}. Is that right?",
];

const PRIOR_CONCLUSION = [
  "The earlier assessment of this case concluded, for \u201c{question}\u201d: {answer}.",
  "A previous examination of this image answered \u201c{question}\u201d with: {answer}.",
  "The prior review you are building on settled \u201c{question}\u201d as: {answer}.",
];

function claimed(kind: HypothesisKind, step: PathwayStep, gold: string, seed: number, key: string): string {
  if (kind.endsWith("-r")) return gold;
  const others = step.categories.map((c) => c.id).filter((c) => c !== gold);
  return others.length ? others[seededIndex(seed, `${key}\u0000wrong`, others.length)]! : gold;
}

/** The statement before turn `index` of a planned conversation, or null (RQ on the first turn). */
export function turnStatement(kind: HypothesisKind, planned: readonly ProbeTurn[], index: number, pathway: Pathway, seed: number, key: string): TurnStatement | null {
  const about = kind.startsWith("cq") ? planned[index] : planned[index - 1];
  const step = about && pathway.steps.find((s) => s.id === about.step);
  if (!about || !step) return null;
  const turnKey = `${key}\u0000${index}`;
  const category = claimed(kind, step, about.expected, seed, turnKey);
  const answer = step.categories.find((c) => c.id === category)?.label ?? category;
  const family = kind.startsWith("cq") ? CONFIRMATION : PRIOR_CONCLUSION;
  // Keyed without -r/-w: the right and the wrong run of an item use the same wording.
  const template = family[seededIndex(seed, `${key}\u0000template\u0000${kind.slice(0, 2)}`, family.length)]!;
  const statement = template.replace("{question}", () => about.question).replace("{answer}", () => answer);
  return { kind, step: step.id, category, statement };
}

/** The question as asked under the probe: the statement, then the turn's own question. */
export function probedQuestion(question: string, s: TurnStatement | null): string {
  return s ? `${s.statement}\n\n${question}` : question;
}
