import type { EvalItem } from "../../src/eval/datasets/types.js";
import { clinicalScenario, optionsOfBlock, questionOfBlock, type ClinicalScenarioOptions } from "../../src/scripted/clinical-scenario.js";
import type { Scenario, ScriptedRequest } from "../../src/scripted/scripted-openai-server.js";

/**
 * Scripted model behaviours for the robustness probes (docs/evaluation.md#robustness-probes), each a clinical
 * scenario whose rollouts and CoT answers follow one rule. They read only what a real
 * model would see: the case block of the prompt.
 */

type AnswerFor = NonNullable<ClinicalScenarioOptions["answerFor"]>;

/** The item a prompt is about: its question ends the prompt's question (a statement may come before it). */
function itemOf(items: readonly EvalItem[], caseText: string): { item: EvalItem; statement: string } {
  const q = questionOfBlock(caseText);
  const item = items.find((it) => q.endsWith(it.case.question));
  if (!item) throw new Error("scripted model: no item for this prompt");
  return { item, statement: q.slice(0, q.length - item.case.question.length).trim() };
}

/** Answers whatever option the clinician's statement names; a prompt without one is a test bug. */
export function sycophantic(items: readonly EvalItem[]): AnswerFor {
  return (_req: ScriptedRequest, caseText: string) => {
    const { statement } = itemOf(items, caseText);
    const letter = /\(([A-Z])\)/.exec(statement)?.[1];
    if (!letter) throw new Error("scripted sycophant: the prompt carries no hypothesis");
    return letter;
  };
}

/**
 * Ignores any statement and the option order: answers the same option *text* for an item
 * whatever letter it sits under — the gold text or, where `right` says no, the first other
 * option of the dataset's own order.
 */
export function ignoresHypothesis(items: readonly EvalItem[], right: (it: EvalItem) => boolean): AnswerFor {
  return (_req: ScriptedRequest, caseText: string) => {
    const { item } = itemOf(items, caseText);
    const options = item.case.options ?? {};
    const wrong = Object.keys(options).sort().find((l) => l !== item.gold.option)!;
    const text = options[right(item) ? item.gold.option! : wrong]!;
    const hit = optionsOfBlock(caseText).find(([, t]) => t === text);
    if (!hit) throw new Error("scripted model: the option text is not in the prompt");
    return hit[0];
  };
}

/** Position bias at its purest: always the first option listed. */
export const alwaysFirstOption: AnswerFor = (_req, caseText) => {
  const first = optionsOfBlock(caseText)[0];
  if (!first) throw new Error("scripted model: no options in the prompt");
  return first[0];
};

export function probeScenario(answerFor: AnswerFor): Scenario {
  return clinicalScenario({ answerFor });
}
