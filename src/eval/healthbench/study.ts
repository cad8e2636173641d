import { ciText, markdownTable, pct, percentRow } from "../report-table.js";
import type { EvalStudy } from "../study.js";
import type { ClippedMean } from "./scoring.js";
import { computeHealthBench, healthbenchScores, type HealthBenchSummary } from "./summary.js";

function rowsOf(label: string, by: Record<string, ClippedMean>): string[][] {
  return Object.entries(by).map(([k, m]) => [`${label}${k}`, String(m.n), pct(m.score), ciText(m.ci), m.bootstrapStd === null ? "—" : (m.bootstrapStd * 100).toFixed(2)]);
}

export function healthbenchMarkdown(h: HealthBenchSummary): string[] {
  return [
    "## HealthBench (rubric-graded)",
    "",
    `${h.graded} example(s) graded${h.ungraded ? `, ${h.ungraded} not graded (the reply or its grading failed; not in the score)` : ""}. Cost per graded example (reply and grading): ${h.costPerExampleUsd === null ? "—" : `$${h.costPerExampleUsd.toFixed(4)}`}.`,
    "",
    markdownTable(
      ["score", "n", "score (%)", "95 % CI", "bootstrap sd (pp)"],
      [["overall", String(h.overall.n), pct(h.overall.score), ciText(h.overall.ci), h.overall.bootstrapStd === null ? "—" : (h.overall.bootstrapStd * 100).toFixed(2)], ...rowsOf("theme: ", h.themes), ...rowsOf("axis: ", h.axes)],
      ["l", "r", "r", "r", "r"],
    ),
    "",
    "An example scores the points of the criteria the grader found met (negative criteria subtract) over its positive points; a theme is its examples' scores, an axis each example's score over that axis's criteria. Each figure is the mean over examples clipped to [0, 1], with a bootstrap over examples (2,000 resamples, seed 1), as HealthBench's reference scorer computes it. Accuracy is not HealthBench's measure: its items have no single gold answer. Other tags are in summary.json (`healthbench.otherTags`).",
    "",
  ];
}

/** HealthBench (docs/evaluation.md#healthbench): summary.json's `healthbench`, its section, report rows and paired figures. */
export const healthbenchStudy: EvalStudy = {
  name: "healthbench",
  summary: (records) => {
    const healthbench = computeHealthBench(records);
    return healthbench ? { healthbench } : {};
  },
  markdown: { after: "headline", section: (s) => (s.healthbench ? healthbenchMarkdown(s.healthbench) : []) },
  rows: (summaries) => (summaries.some((s) => s.healthbench) ? [percentRow("HealthBench score (%)", (s) => s.healthbench?.overall.score)] : []),
  figureTables: (records) => {
    const h = computeHealthBench(records);
    if (!h) return [];
    const axes = Object.keys(h.axes);
    return [
      {
        table: "HealthBench",
        figures: [{ name: "overall score" }, ...axes.map((a) => ({ name: `axis: ${a}` }))],
        values: (rs) => {
          const x = healthbenchScores(rs);
          return [x?.overall ?? null, ...axes.map((a) => x?.axes[a] ?? null)];
        },
      },
    ];
  },
};
