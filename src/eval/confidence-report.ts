import type { EvalMetrics } from "./metrics-types.js";
import { ciText, estimateText, markdownTable, pct } from "./report-table.js";
import { DEFAULT_RESAMPLES, DEFAULT_SEED } from "./stats/bootstrap.js";
import type { ThresholdProposal } from "./stats/selective.js";
import type { Interval } from "./stats/interval.js";
import type { EvalSummary } from "./summary.js";

/** summary.md's sections on the method's confidence: calibration, selective prediction, the built-in abstention. */

/** The line under every table with intervals, naming how they were computed. */
export const INTERVALS_NOTE = `Intervals are 95 %: Wilson's score interval for a proportion of one run; otherwise a percentile bootstrap over items (an item's runs resampled together; ${DEFAULT_RESAMPLES.toLocaleString("en")} resamples, seed ${DEFAULT_SEED}).`;

const fix = (x: number, d = 3) => x.toFixed(d);

/** What the figures do with abstentions, as counted: the scored ones are wrong, the unscored ones (and failed records) are not in them. */
function abstentionNote(m: Pick<EvalMetrics, "abstention">, c: NonNullable<EvalMetrics["confidence"]>): string {
  const abstained = m.abstention ? m.abstention.records - m.abstention.answered : null;
  const scored = c.abstainedScored;
  if (scored === undefined || abstained === null) return "Abstained records with a score count as wrong; failed records and abstained ones without a score are left out.";
  const left = abstained - scored;
  return `${scored} abstained record${scored === 1 ? "" : "s"} with a score count${scored === 1 ? "s" : ""} as wrong${left > 0 ? `; ${left} abstained without a score ${left === 1 ? "is" : "are"} left out` : ""}; failed records are left out.`;
}

export function confidenceSections(m: Pick<EvalMetrics, "confidence" | "abstention">): string[] {
  const out: string[] = [];
  const c = m.confidence;
  if (c) {
    const cal = c.calibration;
    out.push(`## Calibration of ${c.source}`, "");
    out.push(
      markdownTable(
        ["metric", "value", "95 % CI"],
        [
          ["records with a score", String(c.n), ""],
          [`ECE (${cal.bins} equal-mass bins)`, fix(cal.ece.value), ciText(cal.ece.ci, 3, 1)],
          ["Brier score", fix(cal.brier.value), ciText(cal.brier.ci, 3, 1)],
        ],
        ["l", "r", "r"],
      ),
      "",
    );
    out.push(
      markdownTable(
        ["bin", "n", `${c.source} range`, `mean ${c.source}`, "accuracy (%)", "95 % CI"],
        cal.reliability.map((b, i) => [String(i + 1), String(b.n), `${fix(b.lo, 2)}–${fix(b.hi, 2)}`, fix(b.meanConfidence), pct(b.accuracy), ciText(b.ci)]),
        ["r", "r", "r", "r", "r", "r"],
      ),
      "",
      `A calibrated score has each bin's accuracy equal to its mean ${c.source} (the reliability diagram's diagonal). ${abstentionNote(m, c)}`,
      "",
    );
    const sp = c.selective;
    out.push("## Selective prediction", "");
    out.push(
      markdownTable(
        ["metric", "value", "95 % CI"],
        [
          ["AURC (lower is better)", fix(sp.aurc.value), ciText(sp.aurc.ci, 3, 1)],
          ["AURC of a perfect ranking", fix(sp.optimalAurc), ""],
          ["excess AURC", fix(sp.excessAurc), ""],
          ...sp.atCoverage.map((a) => [`accuracy at ${a.coverage * 100} % coverage (%)`, pct(a.accuracy.value), ciText(a.accuracy.ci)]),
        ],
        ["l", "r", "r"],
      ),
      "",
      `Records ranked by ${c.source}, most confident first; acting only on the top share (coverage) gives the accuracy shown. \`medmmv eval calibrate DIR --target-risk 0.1\` proposes a threshold.`,
      "",
    );
  }
  const a = m.abstention;
  if (a && a.records > 0 && a.answered < a.records) {
    out.push("## Built-in abstention", "");
    out.push(
      markdownTable(
        ["metric", "value"],
        [
          ["answered / ran", `${a.answered} / ${a.records}`],
          ["coverage (%)", estimateText(a.coverage)],
          ["accuracy of the answered (%)", estimateText(a.accuracyAnswered)],
        ],
        ["l", "r"],
      ),
      "",
    );
  }
  return out;
}

/** `medmmv eval calibrate`'s answer, in words a team can act on. */
export function thresholdMarkdown(p: ThresholdProposal | null, o: { target: number; source: string; n: number; label: string }): string {
  const head = `# Threshold for ${o.label}: ${o.source} at target risk ${(o.target * 100).toFixed(1)} %`;
  if (o.n === 0) return [head, "", `No record carries ${o.source === "answerSupport" ? "an answerSupport" : `a ${o.source}`}: nothing to calibrate.`].join("\n");
  if (!p) return [head, "", `No threshold keeps the error rate at or below ${(o.target * 100).toFixed(1)} % on these ${o.n} records, not even acting on the most confident alone.`].join("\n");
  return [
    head,
    "",
    markdownTable(
      ["", "value", "95 % CI"],
      [
        [`act when ${o.source} ≥`, fix(p.threshold), ciText(p.thresholdCi, 3, 1)],
        ["coverage (%)", pct(p.coverage), ""],
        ["risk on the kept records (%)", `${pct(p.risk)} (${p.errors} / ${p.kept})`, ciText(p.riskCi)],
      ],
      ["l", "r", "r"],
    ),
    "",
    `Tuned on this run's ${o.n} records: the risk on new cases will be higher than shown here — confirm the threshold on held-out data before relying on it.` +
      (p.riskCi && p.riskCi.hi > o.target ? ` The upper end of the risk's interval (${pct(p.riskCi.hi)} %) is above the target.` : ""),
    `The threshold's interval is a percentile bootstrap over items (${p.thresholdCi?.resamples ?? DEFAULT_RESAMPLES} resamples, seed ${p.thresholdCi?.seed ?? DEFAULT_SEED})${p.resamplesWithout ? `; in ${p.resamplesWithout} resamples no threshold met the target` : ""}. The risk's interval is Wilson's.`,
  ].join("\n");
}

/** The studies' figures (ClinHallu, Dr-LLaVA, robustness) with their bootstrap intervals, in percent. */
export function studyIntervalSection(s: Pick<EvalSummary, "studyIntervals" | "stagewise" | "conversation" | "robustness">): string[] {
  const iv = s.studyIntervals;
  if (!iv) return [];
  const rows: string[][] = [];
  const row = (name: string, value: number | null | undefined, ci: Interval | null | undefined) => {
    if (value !== null && value !== undefined) rows.push([name, pct(value), ciText(ci)]);
  };
  if (iv.stagewise && s.stagewise) for (const [k, name] of [["hV", "H_V"], ["hK", "H_K"], ["hR", "H_R"]] as const) row(`ClinHallu ${name}`, s.stagewise[k], iv.stagewise[k]);
  for (const [order, cis] of Object.entries(iv.conversation ?? {})) {
    const m = s.conversation?.[order as keyof NonNullable<EvalSummary["conversation"]>];
    if (m && cis) for (const [k, name] of [["aQ", "A_Q"], ["aC", "A_C"], ["aD", "A_D"], ["hCC", "H_cc"]] as const) row(`Dr-LLaVA ${name} (${order})`, m[k], cis[k]);
  }
  if (iv.robustness && s.robustness)
    for (const [k, name] of [["accuracy", "probed accuracy"], ["agreesWithHypothesis", "agrees with the hypothesis"], ["agreesWithWrong", "agrees with a wrong hypothesis"], ["consistency", "answer consistency across option orders"], ["flipRate", "flip rate"]] as const)
      row(`robustness: ${name}`, s.robustness[k], iv.robustness[k]);
  if (rows.length === 0) return [];
  return ["## Study figures with intervals", "", markdownTable(["figure", "value (%)", "95 % CI"], rows, ["l", "r", "r"]), "", "Percentile bootstrap over dataset items (an item's runs, option orders and question orders resampled together), each figure recomputed by its study on every resample.", ""];
}
