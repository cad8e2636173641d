import { isCorrect } from "./answer-match.js";
import type { RolloutModelCell } from "./metrics-types.js";
import type { ResultRecord } from "./results-file.js";
import { markdownTable, pct } from "./report-table.js";


/** A rollout's answer key (an option letter, or the normalised answer text) as a prediction to grade. */
function asPrediction(key: string): { option: string | null; text: string } {
  return /^[A-Z]$/.test(key) ? { option: key, text: key } : { option: null, text: key };
}

/**
 * The rollouts of every record, by the model each ran on (MEDMMV_ROLLOUT_MODELS spreads
 * them over several): a mixed-vendor panel's members, each graded on its own answers.
 * Records without rollout models (other methods, runs before models were recorded) add nothing.
 */
export function rolloutsByModel(records: readonly ResultRecord[]): Record<string, RolloutModelCell> {
  const out: Record<string, RolloutModelCell> = {};
  for (const r of records) {
    const models = r.stability?.models;
    if (!models || !r.gold) continue;
    models.forEach((model, i) => {
      const cell = (out[model] ??= { rollouts: 0, answered: 0, correct: 0, accuracy: null });
      const answer = r.stability!.answers[i] ?? null;
      cell.rollouts++;
      if (answer === null) return;
      cell.answered++;
      if (isCorrect(asPrediction(answer), r.gold)) cell.correct++;
    });
  }
  for (const cell of Object.values(out)) cell.accuracy = cell.rollouts ? cell.correct / cell.rollouts : null;
  return out;
}

/** The report's section on a mixed panel (two or more rollout models); nothing for a single model. */
export function rolloutModelSection(cells: Record<string, RolloutModelCell> | undefined): string[] {
  const models = Object.keys(cells ?? {}).sort();
  if (models.length < 2) return [];
  return [
    "## Rollouts by model",
    "",
    markdownTable(
      ["rollout model", "rollouts", "answered", "correct", "accuracy (%)"],
      models.map((m) => [m, String(cells![m]!.rollouts), String(cells![m]!.answered), String(cells![m]!.correct), pct(cells![m]!.accuracy)]),
      ["l", "r", "r", "r", "r"],
    ),
    "",
    "Each rollout graded on its own answer (before refinement and selection), by the model it ran on (MEDMMV_ROLLOUT_MODELS).",
    "",
  ];
}
