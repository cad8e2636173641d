import { parse, View } from "vega";
import { compile, type TopLevelSpec } from "vega-lite";
import type { Calibration, Interval, RiskCoveragePoint } from "./stats/index.js";

/**
 * summary.html's plots: Vega-Lite specs rendered to static SVG in Node (no canvas, no
 * browser, no network: every spec carries its data inline), so the page reads offline and
 * prints. Each plot names its axes and units and says its n.
 */

const WIDTH = 420;
const HEIGHT = 260;

/** Render a Vega-Lite spec to an SVG string. */
export async function renderSvg(spec: TopLevelSpec): Promise<string> {
  const view = new View(parse(compile(spec).spec), { renderer: "none" });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

const base = (title: string, subtitle: string) => ({
  $schema: "https://vega.github.io/schema/vega-lite/v6.json",
  width: WIDTH,
  height: HEIGHT,
  title: { text: title, subtitle, anchor: "start" as const },
  background: "white",
});

/** Reliability diagram: each equal-mass bin's accuracy (with its Wilson interval) against its mean confidence; calibrated bins sit on the diagonal. */
export function reliabilitySpec(cal: Calibration, source: string): TopLevelSpec {
  const bins = cal.reliability.map((b) => ({ confidence: b.meanConfidence, accuracy: b.accuracy, lo: b.ci?.lo ?? b.accuracy, hi: b.ci?.hi ?? b.accuracy, n: b.n }));
  const x = { field: "confidence", type: "quantitative" as const, scale: { domain: [0, 1] }, title: `mean ${source} in bin (0–1)` };
  const y = { field: "accuracy", type: "quantitative" as const, scale: { domain: [0, 1] }, axis: { format: "%" }, title: "accuracy in bin (%)" };
  return {
    ...base(`Reliability diagram: ${source}`, `n = ${cal.n} records, ${cal.bins} equal-mass bins; ECE ${cal.ece.value.toFixed(3)}; bars: 95 % Wilson interval; dashed: perfect calibration`),
    layer: [
      { data: { values: [{ confidence: 0, accuracy: 0 }, { confidence: 1, accuracy: 1 }] }, mark: { type: "line", strokeDash: [4, 4], color: "#888" }, encoding: { x, y } },
      { data: { values: bins }, mark: { type: "rule", color: "#4c78a8" }, encoding: { x, y: { ...y, field: "lo" }, y2: { field: "hi" } } },
      { data: { values: bins }, mark: { type: "point", filled: true, color: "#4c78a8" }, encoding: { x, y, size: { field: "n", type: "quantitative", title: "records in bin" } } },
    ],
  } as TopLevelSpec;
}

/** Risk–coverage curve: the error rate of the most confident share of records, for every share. */
export function riskCoverageSpec(curve: readonly RiskCoveragePoint[], o: { source: string; n: number; aurc: number; optimalAurc: number }): TopLevelSpec {
  const values = curve.map((p) => ({ coverage: p.coverage, risk: p.risk, threshold: p.threshold }));
  return {
    ...base(`Risk–coverage: ranked by ${o.source}`, `n = ${o.n} records; AURC ${o.aurc.toFixed(3)} (a perfect ranking: ${o.optimalAurc.toFixed(3)}); lower is better`),
    data: { values },
    mark: { type: "line", point: true, interpolate: "linear" },
    encoding: {
      x: { field: "coverage", type: "quantitative", scale: { domain: [0, 1] }, axis: { format: "%" }, title: "coverage: share of records acted on (%)" },
      y: { field: "risk", type: "quantitative", scale: { domain: [0, 1] }, axis: { format: "%" }, title: "risk: error rate of those (%)" },
    },
  } as TopLevelSpec;
}

export interface IntervalRow {
  label: string;
  value: number;
  ci: Interval | null | undefined;
}

/** One point per row with its interval as a bar: accuracy by stratum, per run, per folder; paired differences; cost per correct answer. */
export function intervalSpec(rows: readonly IntervalRow[], o: { title: string; subtitle: string; axis: string; percent?: boolean; zeroRule?: boolean; domain?: [number, number] }): TopLevelSpec {
  const values = rows.map((r) => ({ label: r.label, value: r.value, lo: r.ci?.lo ?? r.value, hi: r.ci?.hi ?? r.value }));
  const x = { field: "value", type: "quantitative" as const, title: o.axis, ...(o.percent ? { axis: { format: "%" } } : {}), ...(o.domain ? { scale: { domain: o.domain } } : { scale: { zero: false } }) };
  const y = { field: "label", type: "nominal" as const, title: null, sort: null };
  const layer: unknown[] = [
    { mark: { type: "rule", color: "#4c78a8", strokeWidth: 2 }, encoding: { y, x: { ...x, field: "lo" }, x2: { field: "hi" } } },
    { mark: { type: "point", filled: true, size: 60, color: "#4c78a8" }, encoding: { y, x } },
  ];
  if (o.zeroRule) layer.unshift({ data: { values: [{ zero: 0 }] }, mark: { type: "rule", color: "#888", strokeDash: [4, 4] }, encoding: { x: { field: "zero", type: "quantitative" } } });
  return { ...base(o.title, o.subtitle), height: Math.max(40, 28 * rows.length), data: { values }, layer } as TopLevelSpec;
}
