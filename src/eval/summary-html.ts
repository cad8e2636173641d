import { Marked } from "marked";
import type { PairedReport } from "./paired-report.js";
import { intervalSpec, reliabilitySpec, renderSvg, riskCoverageSpec, type IntervalRow } from "./plots.js";
import type { EvalSummary } from "./summary.js";
import type { TopLevelSpec } from "vega-lite";

/**
 * summary.html: summary.md's tables as HTML with the plots on top, one self-contained file
 * (inline SVG and CSS, no script, a CSP that forbids every fetch) that reads offline.
 */

interface Plot {
  id: string;
  spec: TopLevelSpec;
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

// Raw HTML in the Markdown (an error message, a label) is shown as text, never interpreted.
const markdown = new Marked({ gfm: true, renderer: { html: ({ text }) => escapeHtml(text) } });

function costRows(s: EvalSummary, label = ""): IntervalRow[] {
  const rows: IntervalRow[] = [];
  if (!label && s.runs > 1)
    for (const r of s.accuracyByRun) if (r.correct > 0 && (r.costUsd ?? 0) > 0) rows.push({ label: `run ${r.run} (${r.correct} correct)`, value: r.costUsd! / r.correct, ci: null });
  if (s.costPerCorrect) rows.push({ label: `${label || "all runs"} (${s.correct} correct)`, value: s.costPerCorrect.value, ci: s.costPerCorrect.ci });
  return rows;
}

/** The plots of one run's summary. */
export function summaryPlots(s: EvalSummary): Plot[] {
  const plots: Plot[] = [];
  const n = `n = ${s.items} items${s.runs > 1 ? ` × ${s.runs} runs` : ""}`;
  if (s.runs > 1 && s.accuracy !== null)
    plots.push({
      id: "accuracy-by-run",
      spec: intervalSpec([...s.accuracyByRun.map((r) => ({ label: `run ${r.run} (n=${r.n})`, value: r.accuracy, ci: r.ci })), { label: `all runs (n=${s.records})`, value: s.accuracy, ci: s.accuracyCi }], {
        title: "Accuracy by run",
        subtitle: `${n}; bars: 95 % interval (Wilson per run; bootstrap over items for all runs)`,
        axis: "accuracy (%)",
        percent: true,
        domain: [0, 1],
      }),
    });
  for (const key of Object.keys(s.strata).sort()) {
    const cells = Object.entries(s.strata[key]!).sort(([a], [b]) => a.localeCompare(b));
    plots.push({
      id: `stratum-${key}`,
      spec: intervalSpec(
        cells.map(([v, c]) => ({ label: `${v} (n=${c.n})`, value: c.accuracy, ci: c.ci })),
        { title: `Accuracy by ${key}`, subtitle: `${n}; bars: 95 % interval; n counts item-runs`, axis: "accuracy (%)", percent: true, domain: [0, 1] },
      ),
    });
  }
  const c = s.confidence;
  if (c) {
    plots.push({ id: "reliability", spec: reliabilitySpec(c.calibration, c.source) });
    plots.push({ id: "risk-coverage", spec: riskCoverageSpec(c.selective.curve, { source: c.source, n: c.selective.n, aurc: c.selective.aurc.value, optimalAurc: c.selective.optimalAurc }) });
  }
  const cost = costRows(s);
  if (cost.length)
    plots.push({ id: "cost-per-correct", spec: intervalSpec(cost, { title: "Cost per correct answer", subtitle: `${n}; total cost / correct answers; bar: 95 % bootstrap interval over items`, axis: "cost per correct answer (USD)" }) });
  return plots;
}

/** The plots of an `eval report` comparison. */
export function comparisonPlots(summaries: readonly EvalSummary[], names: readonly string[], paired: PairedReport | null): Plot[] {
  const plots: Plot[] = [];
  plots.push({
    id: "accuracy-by-run-folder",
    spec: intervalSpec(
      summaries.map((s, i) => ({ label: `${names[i]} (n=${s.records})`, value: s.accuracy ?? 0, ci: s.accuracyCi })),
      { title: "Accuracy by run folder", subtitle: "bars: 95 % interval (Wilson for one run; bootstrap over items for several)", axis: "accuracy (%)", percent: true, domain: [0, 1] },
    ),
  });
  if (paired && paired.entries.some((e) => e.comparison.difference))
    plots.push({
      id: "paired-differences",
      spec: intervalSpec(
        paired.entries.filter((e) => e.comparison.difference).map((e) => ({ label: `${e.a} − ${e.b} (${e.comparison.sharedItems} items)`, value: e.comparison.difference!.value * 100, ci: e.comparison.difference!.ci && { ...e.comparison.difference!.ci, lo: e.comparison.difference!.ci.lo * 100, hi: e.comparison.difference!.ci.hi * 100 } })),
        { title: "Paired differences in accuracy", subtitle: "first minus second on shared items; bars: 95 % paired bootstrap interval; dashed: no difference", axis: "difference in accuracy (percentage points)", zeroRule: true },
      ),
    });
  summaries.forEach((s, i) => {
    const c = s.confidence;
    if (!c) return;
    plots.push({ id: `reliability-${i}`, spec: { ...reliabilitySpec(c.calibration, c.source), title: { text: `Reliability diagram: ${names[i]} (${c.source})`, subtitle: `n = ${c.calibration.n}, ${c.calibration.bins} equal-mass bins; ECE ${c.calibration.ece.value.toFixed(3)}; bars: 95 % Wilson interval`, anchor: "start" } } as TopLevelSpec });
    plots.push({ id: `risk-coverage-${i}`, spec: { ...riskCoverageSpec(c.selective.curve, { source: c.source, n: c.selective.n, aurc: c.selective.aurc.value, optimalAurc: c.selective.optimalAurc }), title: { text: `Risk–coverage: ${names[i]} (${c.source})`, subtitle: `n = ${c.selective.n}; AURC ${c.selective.aurc.value.toFixed(3)}`, anchor: "start" } } as TopLevelSpec });
  });
  const cost = summaries.flatMap((s, i) => costRows(s, names[i]));
  if (cost.length) plots.push({ id: "cost-per-correct", spec: intervalSpec(cost, { title: "Cost per correct answer", subtitle: "total cost / correct answers; bars: 95 % bootstrap interval over items", axis: "cost per correct answer (USD)" }) });
  return plots;
}

const STYLE = `body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:72em;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1em}th,td{border:1px solid #ccc;padding:.2em .6em;text-align:right}th:first-child,td:first-child{text-align:left}
.plots{display:flex;flex-wrap:wrap;gap:1.5em}figure.plot{margin:0}figcaption{font-weight:600;margin:.2em 0}blockquote{border-left:4px solid #d62728;margin:0;padding:.2em 1em;background:#fff4f4}
code{background:#f4f4f4;padding:0 .2em}`;

function plotTitle(p: Plot): string {
  const t = (p.spec as { title?: string | { text?: string | string[] } }).title;
  const text = typeof t === "string" ? t : t?.text;
  return (Array.isArray(text) ? text.join(" ") : text) ?? p.id;
}

/** A self-contained page: its title, the plots (each captioned), then the Markdown report as HTML. */
export async function htmlPage(title: string, plots: readonly Plot[], md: string): Promise<string> {
  // Each plot titled in the page's text too (a caption a reader, a screen reader and a search find), not only inside its SVG.
  const svgs = await Promise.all(plots.map(async (p) => `<figure class="plot" data-plot="${escapeHtml(p.id)}"><figcaption>${escapeHtml(plotTitle(p))}</figcaption>${await renderSvg(p.spec)}</figure>`));
  return [
    "<!doctype html>",
    '<html lang="en"><head><meta charset="utf-8">',
    // Nothing on this page may fetch anything: it must read the same offline.
    `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">`,
    `<title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body>`,
    `<h1>${escapeHtml(title)}</h1>`,
    plots.length ? `<section class="plots" aria-label="plots">${svgs.join("\n")}</section>` : "",
    `<section class="report">${markdown.parse(md, { async: false })}</section>`,
    "</body></html>",
  ].join("\n");
}

export async function summaryHtml(s: EvalSummary, md: string): Promise<string> {
  return htmlPage(`Eval: ${s.label} on ${s.dataset.name}`, summaryPlots(s), md);
}

export async function comparisonHtml(summaries: readonly EvalSummary[], names: readonly string[], paired: PairedReport | null, md: string): Promise<string> {
  return htmlPage(`Eval report: ${names.join(" vs ")}`, comparisonPlots(summaries, names, paired), md);
}
