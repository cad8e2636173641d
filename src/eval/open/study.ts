import { markdownTable, pct } from "../report-table.js";
import type { ResultRecord } from "../results-file.js";
import type { EvalStudy } from "../study.js";
import type { OpenMatchSummary } from "./types.js";

/** The matcher against exact match over the records it graded (null: none did). */
export function computeOpenMatch(records: readonly ResultRecord[]): OpenMatchSummary | null {
  const graded = records.filter((r) => r.openMatch && r.status !== "failed");
  if (graded.length === 0) return null;
  const verdicts: Record<string, number> = {};
  for (const r of graded) verdicts[r.openMatch!.verdict] = (verdicts[r.openMatch!.verdict] ?? 0) + 1;
  const agree = graded.filter((r) => r.openMatch!.exact === r.correct).length;
  return {
    items: graded.length,
    correct: graded.filter((r) => r.correct).length,
    exactCorrect: graded.filter((r) => r.openMatch!.exact).length,
    agree,
    agreement: agree / graded.length,
    verdicts,
  };
}

export function openMatchMarkdown(m: OpenMatchSummary): string[] {
  return [
    "## Open-ended answers (graded by meaning)",
    "",
    `${m.items} open answer(s) graded by the equivalence judge against the gold text (the cluster rules first, without a call). Correct: ${m.correct} by the matcher, ${m.exactCorrect} by exact match; the two agree on ${m.agree} (${pct(m.agreement)} %).`,
    "",
    markdownTable(["verdict", "items"], Object.entries(m.verdicts).map(([v, n]) => [v, String(n)]), ["l", "r"]),
    "",
    "rules: equal after case, punctuation, articles and listed abbreviations; judge-same / different: the judge's verdict; judge-failed: the judge did not answer by its contract, and exact match graded the item.",
    "",
  ];
}

/** `--open` (docs/evaluation.md#open-ended-evaluation): the flag, summary.json's `openMatch` and its section. */
export const openStudy: EvalStudy = {
  name: "open",
  flags: [{ flags: "--open", description: "ask multiple-choice items without their options (the gold option's text is the reference) and grade open answers by meaning with the equivalence judge; the summary shows its agreement with exact match" }],
  runOptions: (f) => (f["open"] === true ? { open: true } : {}),
  summary: (records) => {
    const openMatch = computeOpenMatch(records);
    return openMatch ? { openMatch } : {};
  },
  markdown: { after: "headline", section: (s) => (s.openMatch ? openMatchMarkdown(s.openMatch) : []) },
};
