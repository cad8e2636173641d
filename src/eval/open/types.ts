/** `--open`: how an item's open answer was matched with the gold text (results.jsonl `openMatch`). */
export interface OpenMatchRecord {
  /** rules: equal without a model; judge-same / different: the judge's (or the rules') verdict; judge-failed: exact match decided. */
  verdict: "rules" | "judge-same" | "different" | "judge-failed";
  /** What exact (normalised-string) matching says, for the agreement figure. */
  exact: boolean;
  rationale?: string;
  note?: string;
}

/** summary.json `openMatch`: the matcher against exact match on the items both graded. */
export interface OpenMatchSummary {
  /** Items graded by the matcher. */
  items: number;
  /** …correct by the matcher, and by exact match. */
  correct: number;
  exactCorrect: number;
  /** Items where the matcher and exact match agree, and that share. */
  agree: number;
  agreement: number | null;
  /** By verdict: rules, judge-same, different, judge-failed. */
  verdicts: Record<string, number>;
}
