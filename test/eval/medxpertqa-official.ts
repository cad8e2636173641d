/**
 * MedXpertQA's own scorer, re-implemented line for line for the multiple-choice case, so the
 * eval's records can be scored the way the benchmark's authors score theirs.
 *
 * Source: github.com/TsinghuaC3I/MedXpertQA, eval/main.py `set_correctness` and the statistics
 * cell of eval/eval.ipynb (commit f21247d). Licence: MIT, Copyright (c) 2025 TsinghuaC3I.
 *
 * Their multiple-choice rule, in words: an empty prediction list is wrong; with one label, the
 * label and the first predicted letter are compared case-insensitively; with several labels,
 * the lists must match in length and element by element. (`prediction` is what their
 * answer_cleansing returns: a list of letters, `[]` when none was found.)
 */
export function officialSetCorrectness(label: readonly string[], prediction: readonly string[]): boolean {
  if (prediction.length === 0) return false;
  if (label.length === 1) return label[0]!.toLowerCase() === prediction[0]!.toLowerCase();
  if (label.length > 1) return label.length === prediction.length && label.every((l, i) => l === prediction[i]);
  throw new Error("Dataset is not properly defined ...");
}

/**
 * The notebook's "Results stats" cell: per split (id prefix "text" / "mm", case-insensitive)
 * and question type, then per split, per type over both splits, and over everything —
 * each `correct / total` over the records (outputs) in that cell.
 */
export function notebookStats(outputs: ReadonlyArray<{ id: string; question_type: string; correct: boolean }>): Record<string, { correct: number; total: number; accuracy: number }> {
  const types = [...new Set(outputs.map((o) => o.question_type))].sort();
  const out: Record<string, { correct: number; total: number; accuracy: number }> = {};
  const cell = (name: string, keep: (o: (typeof outputs)[number]) => boolean) => {
    const sel = outputs.filter(keep);
    const correct = sel.filter((o) => o.correct === true).length;
    out[name] = { correct, total: sel.length, accuracy: correct / sel.length };
  };
  for (const split of ["text", "mm"]) {
    for (const type of types) cell(`${split}/${type}`, (o) => o.question_type === type && o.id.toLowerCase().startsWith(split));
    cell(split, (o) => o.id.toLowerCase().startsWith(split));
  }
  for (const type of types) cell(type, (o) => o.question_type === type);
  cell("full", () => true);
  return out;
}
