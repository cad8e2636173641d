import { readFile } from "node:fs/promises";
import path from "node:path";
import { MedmmvError } from "../core/contracts/errors.js";
import { VERSION } from "../core/version.js";
import { readManifest, type RunManifest } from "./manifest.js";
import { computeMetrics } from "./metrics.js";
import { readResults, RESULTS_FILE, type ResultRecord } from "./results-file.js";
import type { SelectionReport } from "./sampling.js";
import { STUDIES } from "./studies.js";
import type { MarkdownSlot } from "./study.js";
import { SUMMARY_JSON, type EvalSummary } from "./summary.js";
import { ciText, estimateText, markdownTable, pct, type Row } from "./report-table.js";
import { confidenceSections, INTERVALS_NOTE, studyIntervalSection } from "./confidence-report.js";
import { studyIntervals } from "./study-intervals.js";
import { rolloutModelSection } from "./rollout-models.js";

function stratumCount(c: { n: number; items?: number; runs?: number }): string {
  if (c.items === undefined) return `n=${c.n} item-runs`;
  return (c.runs ?? 1) > 1 ? `n=${c.items} items × ${c.runs} runs` : `n=${c.items}`;
}

/** A cost that leaves out unpriced calls says so: "unpriced" where nothing was priced, "≥ x" where some was. */
function costCells(perItem: number, total: number, unpriced: readonly string[] | undefined, unpricedCalls: number, calls: number): [string, string] {
  if (!unpriced?.length && unpricedCalls === 0) return [fix(perItem, 4), fix(total, 4)];
  if (total === 0 || (unpricedCalls > 0 && unpricedCalls >= calls)) return ["unpriced", "unpriced"];
  return [`≥ ${fix(perItem, 4)}`, `≥ ${fix(total, 4)} (+ ${unpricedCalls ? `${unpricedCalls} unpriced call(s)` : "unpriced"})`];
}

export function buildSummary(
  records: readonly ResultRecord[],
  manifest: RunManifest,
  extra: Partial<Pick<EvalSummary, "planned" | "complete" | "throttle" | "elapsedMs" | "startedAt">> & { details?: Record<string, unknown>; selection?: SelectionReport | null } = {},
): EvalSummary {
  const metrics = computeMetrics(records);
  const studies = studyIntervals(records);
  return {
    schema: "medmmv-eval-summary/1",
    label: manifest.label,
    method: manifest.method,
    complete: extra.complete ?? false,
    planned: extra.planned ?? null,
    ...metrics,
    dataset: {
      name: manifest.dataset,
      input: manifest.input,
      images: manifest.images,
      missingImages: manifest.missingImages,
      details: extra.details ?? {},
      readErrors: records.filter((r) => r.status === "failed" && r.attempts === 0).length,
      warnings: records.filter((r) => (r.warnings?.length ?? 0) > 0).length,
      selection: extra.selection ?? null,
      ...(manifest.inputFile ? { inputFile: manifest.inputFile } : {}),
    },
    ...(manifest.product ? { product: manifest.product } : {}),
    ...(manifest.resumedWith?.length ? { resumedWith: manifest.resumedWith } : {}),
    config: { ...manifest.config, runs: manifest.runs, concurrency: manifest.concurrency },
    models: manifest.models,
    ...(manifest.unpriced?.length ? { unpriced: manifest.unpriced } : {}),
    raters: manifest.raters,
    prompts: manifest.prompts,
    throttle: extra.throttle ?? null,
    elapsedMs: extra.elapsedMs ?? null,
    startedAt: extra.startedAt ?? null,
    finishedAt: new Date().toISOString(),
    version: VERSION,
    ...Object.assign({}, ...STUDIES.map((st) => st.summary?.(records) ?? {})),
    ...(studies ? { studyIntervals: studies } : {}),
  };
}

/**
 * A folder's summary: summary.json when the run finished, otherwise recomputed from
 * results.jsonl and eval.json (a killed run still reports what it has).
 */
export async function loadSummary(dir: string): Promise<EvalSummary> {
  try {
    return JSON.parse(await readFile(path.join(dir, SUMMARY_JSON), "utf8")) as EvalSummary;
  } catch (e) {
    if ((e as { code?: string }).code !== "ENOENT") throw new MedmmvError("INVALID_INPUT", `${path.join(dir, SUMMARY_JSON)} is unreadable: ${(e as Error).message}`);
  }
  const manifest = await readManifest(dir);
  if (!manifest) throw new MedmmvError("NOT_FOUND", `${dir} is not an eval folder (no ${SUMMARY_JSON} or eval.json)`);
  const { records } = await readResults(path.join(dir, RESULTS_FILE));
  return buildSummary(records, manifest);
}

// ---------- formatting ----------

const fix = (x: number | null | undefined, d = 2) => (x === null || x === undefined ? "—" : x.toFixed(d));
const signed = (x: number, d: number) => `${x >= 0 ? "+" : "-"}${Math.abs(x).toFixed(d)}`;

/** A study whose runs count no flagged claims says why (e.g. a conversation eval); null for the others. */
function notMeasuredByStudy(s: Pick<EvalSummary, "dataset">): string | null {
  for (const st of STUDIES) {
    const why = st.hallucinationsNotMeasured?.(s);
    if (why) return why;
  }
  return null;
}

/** Only MedMMV with its detector on checks claims; zero flagged claims elsewhere would read as "no hallucinations". */
export function measuresHallucinations(s: Pick<EvalSummary, "method" | "config" | "dataset">): boolean {
  return s.method === "medmmv" && !(s.config["ablations"] as { noHd?: boolean } | undefined)?.noHd && notMeasuredByStudy(s) === null;
}

/** The studies' summary.md sections that follow the shared section `slot`. */
function studySections(s: EvalSummary, slot: MarkdownSlot): string[] {
  return STUDIES.flatMap((st) => (st.markdown?.after === slot ? st.markdown.section(s) : []));
}

function accuracyCell(s: EvalSummary): string {
  const ci = ciText(s.accuracyCi);
  return `${pct(s.accuracy)}${ci ? ` ${ci}` : ""}${s.accuracyStd === null ? "" : ` ± ${pct(s.accuracyStd)} sd`}`;
}

/** Model calls made and served by the response cache, per run: what tells a fresh draw from a replay. */
function cacheCell(s: EvalSummary): string | null {
  const runs = s.accuracyByRun;
  if (runs.length === 0 || runs[0]!.llmCalls === undefined) return null;
  return runs.map((r) => `${runs.length > 1 ? `run ${r.run}: ` : ""}${r.llmCalls} made, ${r.cacheHits ?? 0} from cache`).join("; ");
}

/** Runs that made no model call at all: their answers are a replay of earlier calls, not a draw. */
function fromCacheWarning(s: EvalSummary): string | null {
  const wholly = s.runsFromCache ?? [];
  if (wholly.length === 0) return null;
  const all = wholly.length === s.runs;
  return `> ${all ? "Served wholly from the response cache" : `Run${wholly.length > 1 ? "s" : ""} ${wholly.join(", ")} served wholly from the response cache`}: no model call was made${all ? "" : " in them"}, so ${all ? "these answers are" : "their answers are"} a replay of earlier calls, not a fresh draw.`;
}


export function summaryMarkdown(s: EvalSummary): string {
  const out: string[] = [];
  out.push(`# Eval: ${s.label} on ${s.dataset.name} (${path.basename(s.dataset.input)})`, "");
  const cached = fromCacheWarning(s);
  if (cached) out.push(cached, "");
  if (!s.complete) out.push(`> Incomplete: ${s.planned === null ? "the run did not finish" : `${s.records} of ${s.planned} planned item-runs recorded`}${s.failed ? `, ${s.failed} failed (rerun with --resume to retry them)` : ""}.`, "");
  const rows: string[][] = [
    ["items", `${s.items}${s.runs > 1 ? ` × ${s.runs} runs` : ""}`],
    ["accuracy (%)", accuracyCell(s) + (s.runs > 1 ? ` (runs: ${s.accuracyByRun.map((r) => `${pct(r.accuracy)} ${ciText(r.ci)}`.trim()).join(", ")})` : "")],
    ["correct / item-runs", `${s.correct} / ${s.records}`],
    ["failed (item-runs)", String(s.failed)],
    ["abstained (item-runs)", String(s.abstained)],
    ["accuracy excluding failed (%)", `${pct(s.accuracyExcludingFailed)} ${ciText(s.accuracyExcludingFailedCi)}`.trim()],
  ];
  const calls = cacheCell(s);
  if (calls) rows.push(["model calls", calls]);
  if (s.stabilityN > 0) rows.push(["RGM (mean)", fix(s.rgm, 3)], ["final-answer entropy (mean)", fix(s.entropy, 3)]);
  if (s.cu) rows.push(["selected path CU (mean)", `${fix(s.cu.cu)} = ${fix(s.cu.evidence)} + ${fix(s.cu.coherence)} − ${fix(s.cu.repairPenalty)}  (repairs ${fix(s.cu.repairs)})`]);
  if (s.answerSupport !== null) rows.push(["answer support (mean)", fix(s.answerSupport)]);
  out.push(markdownTable(["metric", "value"], rows), "");
  out.push(`Failed and abstained items count as wrong; [lo–hi] is the 95 % interval${s.runs > 1 ? ", ± sd the sample standard deviation over runs" : ""}. ${INTERVALS_NOTE}`, "");
  out.push(...studySections(s, "headline"));

  const keys = Object.keys(s.strata).sort();
  if (keys.length) {
    out.push("## Accuracy by stratum", "");
    for (const k of keys) {
      const cells = Object.entries(s.strata[k]!).sort(([a], [b]) => a.localeCompare(b));
      out.push(`### ${k}`, "", markdownTable([k, "items", "item-runs", "accuracy (%)", "95 % CI"], cells.map(([v, c]) => [v, c.items === undefined ? "—" : String(c.items), String(c.n), pct(c.accuracy), ciText(c.ci)]), ["l", "r", "r", "r", "r"]), "");
    }
  }

  out.push(...rolloutModelSection(s.rolloutsByModel));
  out.push(...studySections(s, "strata"));

  const h = s.hallucinations;
  out.push("## Hallucinations (flagged claims, all HD attempts)", "");
  if (!measuresHallucinations(s)) out.push(notMeasuredByStudy(s) ?? "Not measured: this method has no hallucination detector.", "");
  else {
    const rows = (["visual", "knowledge", "reasoning", "total"] as const).map((k) => [k === "total" ? "all" : k, String(h[k]), fix(h.perItem[k]), ciText(h.perItemCi?.[k], 2, 1)]);
    out.push(markdownTable(["stage", "total", "per item", "95 % CI"], rows, ["l", "r", "r", "r"]), "");
    out.push(`${h.resolved} of ${h.total} were repaired away.`, "");
  }

  out.push(...studySections(s, "hallucinations"));
  out.push(...studyIntervalSection(s));
  out.push(...confidenceSections(s));

  const u = s.usage;
  out.push("## Cost", "");
  out.push(
    markdownTable(
      ["", "per item", "total"],
      [
        ["model calls", fix(u.perItem.llmCalls, 1), String(u.total.llmCalls)],
        ["search calls", fix(u.perItem.searchCalls, 1), String(u.total.searchCalls)],
        ["prompt tokens", fix(u.perItem.promptTokens, 0), String(u.total.promptTokens)],
        ["completion tokens", fix(u.perItem.completionTokens, 0), String(u.total.completionTokens)],
        // A run's unpriced calls have no cost to show (never $0); estimated counts say so.
        ["cost (USD)", ...costCells(u.perItem.costUsd, u.total.costUsd, s.unpriced, u.total.unpricedCalls ?? 0, u.total.llmCalls)],
        ...(u.total.estimatedCalls ? [["calls counted by a tokenizer estimate (no usage in the reply)", "", String(u.total.estimatedCalls)]] : []),
        ...(s.costPerCorrect ? [["cost per correct answer (USD)", "", estimateText(s.costPerCorrect, 4, 1)]] : []),
        ["wall time (s)", fix(u.perItem.wallMs / 1000, 1), fix(u.total.wallMs / 1000, 1)],
      ],
      ["l", "r", "r"],
    ),
    "",
  );
  if (s.unpriced?.length) out.push(`Unpriced: ${s.unpriced.join(", ")} ha${s.unpriced.length === 1 ? "s" : "ve"} no price (MEDMMV_PRICES, USD per million tokens), so ${u.total.costUsd > 0 ? "the cost above leaves out their calls" : "the run's cost is unknown, not $0"}; the token counts are complete.`, "");
  if (s.elapsedMs !== null) out.push(`Session wall time ${fix(s.elapsedMs / 1000, 1)} s.`, "");
  if (s.throttle && s.throttle.rateLimited > 0)
    out.push(`Rate limiting: ${s.throttle.rateLimited} signals; item concurrency cut ${s.throttle.decreases} time(s), lowest ${s.throttle.minConcurrency} of ${s.throttle.maxConcurrency}.`, "");

  if (s.reliability) {
    const r = s.reliability;
    out.push("## Reliability (raters)", "");
    const rel = (name: string, x: (typeof r)["overall"]) => [name, String(x.n), fix(x.meanTruthfulness), fix(x.meanInformativeness), fix(x.meanTxI, 1), fix(x.cmhr, 1)];
    out.push(markdownTable(["rater", "n", "T", "I", "T×I", "CMHR"], [...r.raters.map((m) => rel(m, r.byRater[m]!)), rel("all", r.overall)], ["l", "r", "r", "r", "r", "r"]), "");
    if (r.ratingFailures) out.push(`${r.ratingFailures} rating call(s) failed.`, "");
  }

  if (s.failed || Object.keys(s.branchFailures).length) {
    out.push("## Failures", "");
    if (s.failed) out.push(`Failed items by code: ${Object.entries(s.failures.byCode).map(([c, n]) => `${c} ${n}`).join(", ")}`, "");
    for (const f of s.failures.items.slice(0, 20)) out.push(`- ${f.id} (run ${f.run}): [${f.code}] ${f.message.slice(0, 200)}`);
    if (s.failures.items.length) out.push("");
    if (Object.keys(s.branchFailures).length) out.push(`Branch failures inside finished items: ${Object.entries(s.branchFailures).map(([c, n]) => `${c} ${n}`).join(", ")}`, "");
  }

  out.push("## Configuration", "");
  const d = s.dataset;
  out.push(`- dataset: ${d.name}, ${d.input}${d.images ? `, images ${d.images}` : ""} (missing images: ${d.missingImages})`);
  if (d.inputFile) out.push(`- input file: sha256 ${d.inputFile.sha256}, ${d.inputFile.bytes} bytes`);
  if (s.product) out.push(`- product: medmmv ${s.product.version}${s.product.commit ? `, commit ${s.product.commit}${s.product.dirty ? " (with uncommitted changes)" : ""}` : ""}, sources sha256 ${s.product.sourceHash.slice(0, 16)}…`);
  for (const p of s.resumedWith ?? []) out.push(`- resumed under other code: medmmv ${p.version}${p.commit ? `, commit ${p.commit}${p.dirty ? " (with uncommitted changes)" : ""}` : ""}, sources sha256 ${p.sourceHash.slice(0, 16)}… (this folder's records come from more than one product)`);
  for (const [k, v] of Object.entries(d.details)) out.push(`- ${k}: ${typeof v === "string" ? v : JSON.stringify(v)}`);
  if (d.selection) out.push(`- selection: ${d.selection.selected} of ${d.selection.available} items${d.selection.sample !== null ? `, sample ${d.selection.sample} (seed ${d.selection.seed}${d.selection.stratify.length ? `, stratified by ${d.selection.stratify.join(", ")}` : ""})` : ""}${d.selection.limit !== null ? `, limit ${d.selection.limit}` : ""}${d.selection.where ? `, where ${Object.entries(d.selection.where).map(([k, v]) => `${k} ∈ {${v.join(", ")}}`).join(" and ")} (${d.selection.matched} matched)` : ""}`);
  if (d.readErrors) out.push(`- ${d.readErrors} item-run(s) failed before reaching the model (unreadable record or image)`);
  if (d.warnings) out.push(`- ${d.warnings} item(s) carry a warning (e.g. run text-only)`);
  out.push(`- method: ${s.method}; config: ${JSON.stringify(s.config)}`);
  out.push(`- models: ${Object.entries(s.models).map(([r, m]) => `${r} ${m}`).join(", ")}${s.raters.length ? `; raters: ${s.raters.join(", ")}` : ""}`);
  out.push(`- prompts: ${Object.entries(s.prompts).map(([n, h]) => `${n} ${h.slice(0, 19)}`).join(", ")}`);
  out.push(`- medmmv ${s.version}, finished ${s.finishedAt}`, "");
  return out.join("\n");
}



/**
 * Several runs side by side (methods, ablations), each later column with its difference
 * from the first: accuracy in percentage points, the rest in their own units.
 */
export function compareSummaries(summaries: readonly EvalSummary[], names: readonly string[]): string {
  if (summaries.length === 0) throw new MedmmvError("INVALID_INPUT", "eval report needs at least one folder");
  const rows: Row[] = [
    { name: "items", value: (s) => s.items, format: (x, s) => `${x}${s.runs > 1 ? ` ×${s.runs}` : ""}` },
    { name: "accuracy (%)", value: (s) => (s.accuracy === null ? null : s.accuracy * 100), format: (_x, s) => accuracyCell(s), delta: 1 },
    { name: "failed", value: (s) => s.failed, format: (x) => String(x), delta: 0 },
  ];
  // Strata present in any folder, in a stable order.
  const strata = new Map<string, Set<string>>();
  for (const s of summaries) for (const [k, vals] of Object.entries(s.strata)) for (const v of Object.keys(vals)) (strata.get(k) ?? strata.set(k, new Set()).get(k)!).add(v);
  for (const k of [...strata.keys()].sort()) {
    for (const v of [...strata.get(k)!].sort()) {
      rows.push({
        name: `  ${k} = ${v}`,
        value: (s) => {
          const c = s.strata[k]?.[v];
          return c ? c.accuracy * 100 : null;
        },
        // n counts items (with the runs beside where there are several); older summaries only have item-runs.
        format: (x, s) => `${x.toFixed(1)} (${stratumCount(s.strata[k]![v]!)})`,
        delta: 1,
      });
    }
  }
  rows.push(
    { name: "RGM", value: (s) => (s.stabilityN > 0 ? s.rgm : null), format: (x) => x.toFixed(3), delta: 3 },
    { name: "CU (selected path)", value: (s) => s.cu?.cu ?? null, format: (x) => x.toFixed(2), delta: 2 },
    { name: "hallucinations / item", value: (s) => (measuresHallucinations(s) ? s.hallucinations.perItem.total : null), format: (x) => x.toFixed(2), delta: 2 },
    { name: "  visual", value: (s) => (measuresHallucinations(s) ? s.hallucinations.perItem.visual : null), format: (x) => x.toFixed(2), delta: 2 },
    { name: "  knowledge", value: (s) => (measuresHallucinations(s) ? s.hallucinations.perItem.knowledge : null), format: (x) => x.toFixed(2), delta: 2 },
    { name: "  reasoning", value: (s) => (measuresHallucinations(s) ? s.hallucinations.perItem.reasoning : null), format: (x) => x.toFixed(2), delta: 2 },
  );
  if (summaries.some((s) => s.confidence))
    rows.push(
      { name: "ECE (confidence)", value: (s) => s.confidence?.calibration.ece.value ?? null, format: (x, s) => `${x.toFixed(3)} ${ciText(s.confidence!.calibration.ece.ci, 3, 1)}`, delta: 3 },
      { name: "AURC", value: (s) => s.confidence?.selective.aurc.value ?? null, format: (x, s) => `${x.toFixed(3)} ${ciText(s.confidence!.selective.aurc.ci, 3, 1)}`, delta: 3 },
    );
  for (const st of STUDIES) rows.push(...(st.rows?.(summaries) ?? []));
  if (summaries.some((s) => s.reliability))
    rows.push(
      { name: "T×I", value: (s) => s.reliability?.overall.meanTxI ?? null, format: (x) => x.toFixed(1), delta: 1 },
      { name: "CMHR", value: (s) => s.reliability?.overall.cmhr ?? null, format: (x) => x.toFixed(1), delta: 1 },
    );
  rows.push(
    { name: "model calls / item", value: (s) => s.usage.perItem.llmCalls, format: (x) => x.toFixed(1), delta: 1 },
    { name: "tokens / item", value: (s) => s.usage.perItem.promptTokens + s.usage.perItem.completionTokens, format: (x) => x.toFixed(0), delta: 0 },
    { name: "cost / item (USD)", value: (s) => s.usage.perItem.costUsd, format: (x) => x.toFixed(4), delta: 4 },
    { name: "cost / correct answer (USD)", value: (s) => (s.correct > 0 ? s.usage.total.costUsd / s.correct : null), format: (x) => x.toFixed(4), delta: 4 },
    { name: "cost ÷ CoT (same input)", value: (s) => costAgainstCot(s, summaries), format: (x) => `${x.toFixed(1)}×` },
    { name: "wall / item (s)", value: (s) => s.usage.perItem.wallMs / 1000, format: (x) => x.toFixed(1), delta: 1 },
  );

  const header = ["", ...names];
  const body: string[][] = [["method", ...summaries.map((s) => s.label)]];
  for (const row of rows) {
    const base = row.value(summaries[0]!);
    body.push([
      row.name,
      ...summaries.map((s, i) => {
        const x = row.value(s);
        if (x === null) return "—";
        const cell = row.format(x, s);
        if (i === 0 || row.delta === undefined || base === null) return cell;
        return `${cell} (${signed(x - base, row.delta)})`;
      }),
    ]);
  }
  const incomplete = summaries.map((s, i) => (s.complete ? null : names[i])).filter((n): n is string => n !== null);
  const notes = ["Deltas in parentheses are against the first column (accuracy in percentage points). Failed items count as wrong; [lo–hi] is the 95 % interval, ± sd the sample std over runs. The paired comparison below tests the differences."];
  if (incomplete.length) notes.push(`Incomplete runs: ${incomplete.join(", ")}.`);
  const datasets = new Set(summaries.map((s) => `${s.dataset.name}:${path.basename(s.dataset.input)}`));
  if (datasets.size > 1) notes.push(`Warning: the folders evaluate different inputs (${[...datasets].join(", ")}).`);
  const appendices = STUDIES.flatMap((st) => st.appendix?.(summaries, names) ?? []);
  return [markdownTable(header, body, ["l", ...names.map(() => "r" as const)]), "", ...notes, ...appendices].join("\n");
}

/**
 * A run's cost per item over a CoT run's among the compared folders, on the same input and
 * selection (the same items); null without such a CoT run or without prices (cost 0).
 */
function costAgainstCot(s: EvalSummary, all: readonly EvalSummary[]): number | null {
  const same = (a: EvalSummary) => a.dataset.input === s.dataset.input && JSON.stringify(a.dataset.selection) === JSON.stringify(s.dataset.selection) && a.items === s.items;
  const cot = all.find((a) => a.method === "cot" && a.label === "cot" && same(a)) ?? all.find((a) => a.method === "cot" && same(a));
  if (!cot || cot.usage.perItem.costUsd <= 0) return null;
  return s.usage.perItem.costUsd / cot.usage.perItem.costUsd;
}
