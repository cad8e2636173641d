/** The gold text of a HealthBench item: it has no single answer (the rubric grades the reply); also how its records are told apart. */
export const HEALTHBENCH_GOLD = "(graded by the HealthBench rubric)";

/** One criterion of a HealthBench rubric, as the published JSONL has it. */
export interface RubricItem {
  criterion: string;
  /** Positive for what a good reply does, negative for what a bad one does (−10 … 10 in the release). */
  points: number;
  /** Rubric tags: `axis:…` (accuracy, completeness, …), `level:example|cluster`, `cluster:…` (consensus). */
  tags: string[];
}

/** What an item carries from its HealthBench record. */
export interface HealthBenchItem {
  promptId: string;
  /** The conversation up to and including the last user turn, as published. */
  prompt: Array<{ role: string; content: string }>;
  rubrics: RubricItem[];
  /** Example tags: `theme:…`, `physician_agreed_category:…`. */
  exampleTags: string[];
}

/** The grader's verdict on one criterion. */
export interface CriterionGrade extends RubricItem {
  met: boolean;
  explanation: string;
}

/** results.jsonl `healthbench` of a graded reply. */
export interface HealthBenchRecord {
  promptId: string;
  exampleTags: string[];
  /** One verdict per rubric item, in the record's order; absent when the reply was not graded. */
  grades: CriterionGrade[];
  /** Points of met criteria (negative ones subtract) / positive points available; not clipped (the mean is). */
  score: number | null;
  /** The same score over the criteria carrying each rubric tag (null where none of them has positive points: left out). */
  tagScores: Record<string, number | null>;
}
