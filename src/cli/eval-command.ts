import path from "node:path";
import { Command, InvalidArgumentError, Option } from "commander";
import { assertLlmConfigured, loadConfig, type Config } from "../core/config.js";
import { describeError } from "../core/contracts/errors.js";
import type { ResponseCache } from "../core/llm/model-client.js";
import { DATASET_NAMES, type JsonlFieldMap } from "../eval/datasets/index.js";
import { METHOD_NAMES, type MethodName } from "../eval/methods/types.js";
import type { EvalRunOptions } from "../eval/runner.js";
import type { HypothesisKind } from "../eval/probes/types.js";
import { CONVERSATION_DATASETS, type QuestionOrder } from "../eval/conversation/types.js";
import { STUDIES } from "../eval/studies.js";
import type { StudyFlag } from "../eval/study.js";
import { EXIT, exitCodeFor, intArg as int, listArg as list } from "./cli-args.js";
import type { StagewiseCliOptions } from "./stagewise-options.js";
import { EVAL_SUMMARY } from "./command-summaries.js";

// The runner, the store and the report are imported when a command runs, so `--help` and
// the other commands start fast.

function fieldMap(v: string): JsonlFieldMap {
  let parsed: unknown;
  try {
    parsed = JSON.parse(v);
  } catch {
    throw new InvalidArgumentError('expected JSON, e.g. \'{"question":"q","options":"choices","answer":"label","strata":["subject"]}\'');
  }
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) throw new InvalidArgumentError("expected a JSON object");
  return parsed as JsonlFieldMap;
}

export interface EvalCliOptions extends StagewiseCliOptions {
  dataset?: string;
  input?: string;
  images?: string;
  missingImages?: "error" | "text-only";
  copBase: "0" | "1" | "auto";
  fieldMap?: JsonlFieldMap;
  limit?: number;
  sample?: number;
  stratify?: string[];
  seed?: number;
  runs: number;
  method: MethodName;
  k?: number;
  maxRepairs?: number;
  adaptive?: boolean;
  /** commander's `--no-dedupe` */
  dedupe?: boolean;
  cache?: Config["llm"]["cache"];
  expansion: boolean;
  hd: boolean;
  textDoctor: boolean;
  imageDoctor: boolean;
  webSearch: boolean;
  select?: "cu" | "random" | "majority";
  concurrency?: number;
  resume?: boolean;
  raters?: string[];
  saveResults?: boolean;
  out?: string;
  json?: boolean;
  hypothesis?: HypothesisKind;
  shuffleOptions?: number;
  /** Conversation datasets: question orders to run (default all three). */
  order?: QuestionOrder[];
  /** A finished eval folder whose responses this run replays. */
  replayCache?: string;
  replayCacheThenCall?: boolean;
  /** --where field=value[,value] (repeatable). */
  where?: string[];
  maxCost?: number;
  maxTokens?: number;
  workers?: number;
}

/** A commander parser for a positive amount of dollars. */
function usd(v: string): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError("expected a positive number of US dollars, e.g. 25 or 0.5");
  return n;
}

/** The store's response cache, when caching is on; an eval without it still runs (and says so). */
async function openCache(config: Config): Promise<{ cache: ResponseCache | null; close: () => Promise<void> }> {
  if (config.llm.cache === "off") return { cache: null, close: async () => undefined };
  try {
    const [{ openStore }, { storeResponseCache }] = await Promise.all([import("../server/store/open-store.js"), import("../server/service/store-cache.js")]);
    const store = await openStore(config.store);
    return { cache: storeResponseCache(store), close: () => store.close() };
  } catch (err) {
    process.stderr.write(`medmmv eval: response cache unavailable (${describeError(err).message}); running without it\n`);
    return { cache: null, close: async () => undefined };
  }
}

function usageError(message: string): number {
  process.stderr.write(`medmmv eval: ${message}\n`);
  return EXIT.usage;
}

/** Flags → runner options (commander turns `--no-hd` into `hd: false`). */
export function toRunOptions(o: EvalCliOptions & { dataset: string; input: string; out: string }): EvalRunOptions {
  return {
    dataset: o.dataset,
    input: o.input,
    images: o.images,
    missingImages: o.missingImages,
    copBase: o.copBase === "auto" ? "auto" : (Number(o.copBase) as 0 | 1),
    fieldMap: o.fieldMap,
    limit: o.limit,
    sample: o.sample,
    stratify: o.stratify,
    seed: o.seed,
    runs: o.runs,
    method: o.method,
    pipeline: {
      k: o.k,
      maxRepairs: o.maxRepairs,
      adaptive: o.adaptive,
      dedupe: o.dedupe,
      select: o.select,
      ablations: { noExpansion: !o.expansion, noHd: !o.hd, noTextDoctor: !o.textDoctor, noImageDoctor: !o.imageDoctor, noWebSearch: !o.webSearch },
    },
    concurrency: o.concurrency,
    resume: o.resume,
    raters: o.raters,
    out: o.out,
    replayCache: o.replayCache,
    ...(o.replayCacheThenCall ? { replayThenCall: true } : {}),
    ...(o.saveResults ? { saveResults: true } : {}),
    ...(o.maxCost !== undefined ? { maxCostUsd: o.maxCost } : {}),
    ...(o.maxTokens !== undefined ? { maxTokens: o.maxTokens } : {}),
    ...(o.workers !== undefined ? { workers: o.workers } : {}),
    ...Object.assign({}, ...STUDIES.map((st) => st.runOptions?.({ ...o }) ?? {})),
  };
}

/** A study's described flag as a commander option. */
function studyOption(f: StudyFlag): Option {
  const opt = new Option(f.flags, f.description);
  if (f.choices) opt.choices(f.choices);
  if (f.int) opt.argParser(int(f.int[0], f.int[1]));
  const fromList = f.list;
  if (fromList) opt.argParser((v: string) => fromList(list(v)));
  return opt;
}

/**
 * Flags the conversation eval does not take. They are refused rather than dropped, so a run
 * never looks like a probe, a judged run or a sample that it is not.
 */
const NOT_FOR_CONVERSATIONS: Array<[keyof EvalCliOptions, string]> = [
  ["shuffleOptions", "--shuffle-options"],
  ["stageJudge", "--stage-judge"],
  ["raters", "--raters"],
  ["traces", "--traces"],
  ["traceFormat", "--trace-format"],
  ["replace", "--replace"],
  ["traceRetries", "--trace-retries"],
  ["letterShortcut", "--letter-shortcut"],
  ["sample", "--sample"],
  ["stratify", "--stratify"],
  ["fieldMap", "--field-map"],
  ["replayCache", "--replay-cache"],
  ["replayCacheThenCall", "--replay-cache-then-call"],
  ["where", "--where"],
  // The conversation runner schedules whole conversations and has no spending limit yet.
  ["maxCost", "--max-cost"],
  ["maxTokens", "--max-tokens"],
  ["workers", "--workers"],
];

async function evalAction(o: EvalCliOptions): Promise<number> {
  if (!o.dataset) return usageError(`--dataset is required (${[...DATASET_NAMES, ...CONVERSATION_DATASETS].join(" | ")})`);
  if ((CONVERSATION_DATASETS as readonly string[]).includes(o.dataset)) {
    const flag = NOT_FOR_CONVERSATIONS.find(([k]) => o[k] !== undefined)?.[1];
    if (flag) return usageError(`${flag} does not apply to --dataset ${o.dataset}`);
  } else if (o.order) return usageError(`--order applies to --dataset ${CONVERSATION_DATASETS.join("|")} only`);
  if (!o.input) return usageError("--input FILE is required");
  if (!o.out) return usageError("--out DIR is required");
  let where: Record<string, string[]> | undefined;
  try {
    if (o.where?.length) where = (await import("../eval/sampling.js")).parseWhere(o.where);
  } catch (err) {
    return usageError(describeError(err).message);
  }
  let config: Config;
  try {
    config = loadConfig();
    assertLlmConfigured(config);
  } catch (err) {
    return usageError(describeError(err).message);
  }
  if (o.cache) config = { ...config, llm: { ...config.llm, cache: o.cache } };
  let opts: EvalRunOptions;
  try {
    opts = toRunOptions({ ...o, dataset: o.dataset, input: o.input, out: o.out });
    if (where) opts.where = where;
  } catch (err) {
    return usageError(describeError(err).message);
  }
  const { defaultConcurrency } = await import("../eval/runner.js");
  opts.concurrency ??= defaultConcurrency(config);
  process.stderr.write(`medmmv eval: ${opts.concurrency} items in flight${o.concurrency === undefined ? ` (MEDMMV_MAX_CONCURRENCY=${config.llm.maxConcurrency}; --concurrency N to change)` : ""}, at most ${config.llm.maxConcurrency} model calls at once\n`);

  // First Ctrl-C: stop starting items, let the summary be written. Second: leave now.
  const ctrl = new AbortController();
  const onSigint = () => {
    if (ctrl.signal.aborted) process.exit(EXIT.interrupted);
    process.stderr.write("\nmedmmv eval: stopping — items in flight are dropped (rerun with --resume); Ctrl-C again to quit at once\n");
    ctrl.abort();
  };
  process.on("SIGINT", onSigint);
  const { cache, close } = await openCache(config);
  try {
    if ((CONVERSATION_DATASETS as readonly string[]).includes(o.dataset)) return await conversationEval(o, opts, config, cache, ctrl.signal);
    const { runEval } = await import("../eval/runner.js");
    const { summaryMarkdown } = await import("../eval/report.js");
    const { summary, interrupted, dir, budgetReached, spent, itemProcesses } = await runEval(opts, {
      config,
      signal: ctrl.signal,
      progress: process.stderr,
      cache,
      // Item processes are this command again (`medmmv eval-worker`), started the way this one was.
      itemWorkerEntry: { script: process.argv[1]!, execArgv: process.execArgv },
    });
    process.stdout.write(o.json ? JSON.stringify(summary, null, 2) + "\n" : summaryMarkdown(summary) + "\n");
    process.stderr.write(`medmmv eval: results in ${path.join(dir, "results.jsonl")}, summary in ${path.join(dir, "summary.json")} and summary.md\n`);
    if (itemProcesses) process.stderr.write(`medmmv eval: ${itemProcesses.length} item processes answered ${itemProcesses.map((p) => p.items).join(" + ")} items\n`);
    if (budgetReached) {
      process.stderr.write(`medmmv eval: budget reached (${spent.tokens} tokens, $${spent.costUsd.toFixed(4)} spent by the run): no more items were started; --resume with a larger --max-cost/--max-tokens (or none) continues\n`);
      return EXIT.interrupted;
    }
    if (interrupted) return EXIT.interrupted;
    return summary.failed > 0 ? EXIT.failed : EXIT.ok;
  } catch (err) {
    const e = describeError(err);
    process.stderr.write(`medmmv eval: [${e.code}] ${e.message}\n`);
    return exitCodeFor(err);
  } finally {
    process.off("SIGINT", onSigint);
    await close().catch(() => undefined);
  }
}

/** `--dataset drllava|conversation`: multi-turn conversations, metrics per question order. */
async function conversationEval(o: EvalCliOptions, opts: EvalRunOptions, config: Config, cache: ResponseCache | null, signal: AbortSignal): Promise<number> {
  if (o.method !== "medmmv" && o.method !== "cot") return usageError(`--method ${o.method} does not run conversations; use medmmv or cot`);
  const { runConversationEval } = await import("../eval/conversation/run-conversation-eval.js");
  const { summaryMarkdown } = await import("../eval/report.js");
  const { summary, dir, interrupted } = await runConversationEval(
    { dataset: o.dataset as (typeof CONVERSATION_DATASETS)[number], input: opts.input, images: opts.images, missingImages: opts.missingImages, method: o.method, orders: o.order, seed: opts.seed, limit: opts.limit, runs: opts.runs, pipeline: opts.pipeline, concurrency: opts.concurrency, resume: opts.resume, hypothesis: opts.hypothesis, hypothesisWarning: opts.hypothesisWarning, out: opts.out },
    { config, cache, signal, progress: process.stderr },
  );
  process.stdout.write(o.json ? JSON.stringify(summary, null, 2) + "\n" : summaryMarkdown(summary) + "\n");
  process.stderr.write(`medmmv eval: results in ${path.join(dir, "results.jsonl")}, summary in ${path.join(dir, "summary.json")} and summary.md\n`);
  if (interrupted) return EXIT.interrupted;
  return summary.failed > 0 ? EXIT.failed : EXIT.ok;
}

interface ReportCliOptions {
  json?: boolean;
  out?: string;
  table?: "medxpertqa";
  by?: string[];
  poolDifferent?: boolean;
}

/** `eval report --table medxpertqa A B…` / `--by f1,f2 A B…`: the folders' records pooled into one crossed table. */
async function tableAction(dirs: string[], o: ReportCliOptions): Promise<number> {
  try {
    const { poolFolders, medxpertqaTable, crossedBreakdown, crossedTableMarkdown } = await import("../eval/crossed-table.js");
    const pooled = await poolFolders(dirs.map((d) => path.resolve(d)), { allowDifferent: o.poolDifferent });
    const m = pooled.manifests[0]!;
    const tables = [
      ...(o.table === "medxpertqa" ? [{ name: `MedXpertQA: ${m.label}`, table: medxpertqaTable(pooled.records) }] : []),
      ...(o.by ? [{ name: `${m.label} by ${o.by.join(" × ")}`, table: crossedBreakdown(pooled.records, o.by) }] : []),
    ];
    const json = JSON.stringify({ folders: dirs, method: m.method, label: m.label, differences: pooled.differences, tables }, null, 2) + "\n";
    const note = pooled.differences.length ? `\n\nPooled although they differ (--pool-different): ${pooled.differences.join("; ")}` : "";
    const md = tables.map((t) => crossedTableMarkdown(t.table, t.name)).join("\n\n") + `\n\nFolders: ${dirs.join(", ")}${note}\n`;
    if (o.out) {
      const { mkdir, writeFile } = await import("node:fs/promises");
      const out = path.resolve(o.out);
      await mkdir(out, { recursive: true });
      await writeFile(path.join(out, "table.md"), md);
      await writeFile(path.join(out, "table.json"), json);
      process.stderr.write(`medmmv eval report: ${path.join(out, "table.md")} and table.json\n`);
    }
    process.stdout.write(o.json ? json : md);
    return EXIT.ok;
  } catch (err) {
    return failWith("medmmv eval report", err);
  }
}

async function reportAction(dirs: string[], o: ReportCliOptions): Promise<number> {
  if (o.table || o.by) return tableAction(dirs, o);
  try {
    const { compareSummaries, loadSummary } = await import("../eval/report.js");
    const { loadOutcomes, pairedMarkdown, pairedReport } = await import("../eval/paired-report.js");
    const resolved = dirs.map((d) => path.resolve(d));
    const summaries = await Promise.all(resolved.map((d) => loadSummary(d)));
    // Folder names as column heads; the full path where two share a name.
    const bases = resolved.map((d) => path.basename(d));
    const names = bases.map((b, i) => (bases.indexOf(b) !== bases.lastIndexOf(b) ? dirs[i]! : b));
    const sections: Array<(names: readonly string[]) => string> = [];
    for (const st of STUDIES) {
      const section = await st.compareFolders?.(resolved, summaries);
      if (section) sections.push(section);
    }
    const paired = summaries.length > 1 ? pairedReport(names, await Promise.all(resolved.map(loadOutcomes)), summaries) : null;
    const { loadRecords, pairedFigures, pairedFiguresMarkdown } = await import("../eval/paired-figures.js");
    const figures = paired ? pairedFigures(names, await Promise.all(resolved.map(loadRecords))) : [];
    const md = [compareSummaries(summaries, names), ...(paired ? ["", pairedMarkdown(paired)] : []), ...(figures.length ? ["", pairedFiguresMarkdown(figures)] : []), ...sections.map((section) => "\n" + section(names))].join("\n") + "\n";
    const json = JSON.stringify(Object.fromEntries(names.map((n, i) => [n, summaries[i]])), null, 2) + "\n";
    if (o.out) {
      const { mkdir, writeFile } = await import("node:fs/promises");
      const { comparisonHtml } = await import("../eval/summary-html.js");
      const out = path.resolve(o.out);
      await mkdir(out, { recursive: true });
      await writeFile(path.join(out, "report.md"), md);
      await writeFile(path.join(out, "report.json"), JSON.stringify({ runs: Object.fromEntries(names.map((n, i) => [n, summaries[i]])), paired, pairedFigures: figures }, null, 2) + "\n");
      await writeFile(path.join(out, "summary.html"), await comparisonHtml(summaries, names, paired, `# Eval report: ${names.join(" vs ")}\n\n${md}`));
      process.stderr.write(`medmmv eval report: ${path.join(out, "report.md")}, report.json and summary.html\n`);
    }
    process.stdout.write(o.json ? json : md);
    return EXIT.ok;
  } catch (err) {
    return failWith("medmmv eval report", err);
  }
}

async function calibrateAction(dir: string, o: { targetRisk: number; json?: boolean }): Promise<number> {
  try {
    const { readResults, RESULTS_FILE } = await import("../eval/results-file.js");
    const { loadSummary } = await import("../eval/report.js");
    const { confidenceName, scoredRecords } = await import("../eval/record-stats.js");
    const { proposeThreshold } = await import("../eval/stats/selective.js");
    const { thresholdMarkdown } = await import("../eval/confidence-report.js");
    const folder = path.resolve(dir);
    const summary = await loadSummary(folder);
    const { records } = await readResults(path.join(folder, RESULTS_FILE));
    const scored = scoredRecords(records);
    const proposal = scored.length ? proposeThreshold(scored, o.targetRisk) : null;
    const source = confidenceName(summary.method);
    if (o.json) process.stdout.write(JSON.stringify({ run: folder, source, records: scored.length, targetRisk: o.targetRisk, tunedOn: "this run's records (validate on held-out data)", proposal }, null, 2) + "\n");
    else process.stdout.write(thresholdMarkdown(proposal, { target: o.targetRisk, source, n: scored.length, label: summary.label }) + "\n");
    return scored.length === 0 || !proposal ? EXIT.failed : EXIT.ok;
  } catch (err) {
    return failWith("medmmv eval calibrate", err);
  }
}

function riskArg(v: string): number {
  const x = Number(v);
  if (!Number.isFinite(x) || x < 0 || x >= 1) throw new InvalidArgumentError("expected a number in [0, 1), e.g. 0.1");
  return x;
}

function failWith(command: string, err: unknown): number {
  process.stderr.write(`${command}: ${describeError(err).message}\n`);
  return exitCodeFor(err);
}

async function exportAction(dir: string, o: { format: "csv" | "parquet"; to?: string }): Promise<number> {
  // No maintained Parquet writer for Node is among our dependencies: refused rather than half-written.
  if (o.format === "parquet") return usageError("--format parquet is not supported (no maintained Parquet library for Node is in use); export csv and convert it, e.g. pandas.read_csv(f).to_parquet(…)");
  try {
    const { exportCsv } = await import("../eval/export-csv.js");
    const { csv, rows } = await exportCsv(path.resolve(dir));
    if (o.to) {
      const { writeFile } = await import("node:fs/promises");
      await writeFile(path.resolve(o.to), csv);
      process.stderr.write(`medmmv eval export: ${rows} rows (one per item-run) in ${o.to}\n`);
    } else process.stdout.write(csv);
    return EXIT.ok;
  } catch (err) {
    return failWith("medmmv eval export", err);
  }
}

async function exportTracesAction(dir: string, o: { to: string; run: number }): Promise<number> {
  try {
    const { exportTraces } = await import("../eval/stagewise/export-traces.js");
    const counts = await exportTraces(path.resolve(dir), path.resolve(o.to), o.run);
    for (const [file, n] of Object.entries(counts)) process.stdout.write(`${path.join(o.to, file)}: ${n} record(s)\n`);
    return EXIT.ok;
  } catch (err) {
    return failWith("medmmv eval export-traces", err);
  }
}

/** `medmmv eval …` (run a benchmark) and `medmmv eval report DIR…` (compare runs). */
export function registerEvalCommands(program: Command): void {
  const cmd = program
    .command("eval")
    .description(EVAL_SUMMARY)
    .addOption(new Option("--dataset <name>", "dataset format (drllava, conversation: multi-turn conversations on a pathway)").choices([...DATASET_NAMES, ...CONVERSATION_DATASETS]))
    .option("--input <file>", "the benchmark file as distributed (JSONL or JSON array)")
    .option("--images <dir>", "folder holding the dataset's images")
    .addOption(new Option("--missing-images <mode>", "an item whose images are missing: fail it, or run it text-only (flagged)").choices(["error", "text-only"]))
    .addOption(new Option("--cop-base <base>", "MedMCQA `cop` numbering").choices(["0", "1", "auto"]).default("auto"))
    .option("--field-map <json>", "jsonl dataset: where each field lives (id, question, options, answer, answerKind, notes, images, strata)", fieldMap)
    .option("--limit <n>", "only the first N items (after sampling)", int(1, 10_000_000))
    .option("--sample <n>", "a random sample of N items (deterministic for --seed)", int(1, 10_000_000))
    .option("--stratify <keys>", "sample proportionally within strata, e.g. body_system,question_type", list)
    .option("--seed <s>", "seed for --sample (and the per-run seed base of --select random)", int(0, 2 ** 31 - 1))
    .option("--runs <r>", "repeat every item R times, each run a fresh draw from the model; accuracy with its 95 % interval over items and runs, and ± std over runs", int(1, 100), 1)
    .addOption(new Option("--method <m>", "medmmv, zero-shot chain of thought, self-consistency (k CoT samples, majority vote), or stagewise (ClinHallu's stage-wise protocol)").choices(METHOD_NAMES).default("medmmv"))
    .option("--k <n>", "rollouts (medmmv) or samples (self-consistency)", int(1, 32))
    .option("--max-repairs <n>", "repair budget per path", int(0, 10))
    .option("--adaptive", "sample rollouts in rounds; stop early when they agree")
    .option("--no-dedupe", "refine identical rollouts separately (measures what deduplication saves)")
    .addOption(new Option("--cache <mode>", "response cache in the store: temperature-0 calls, all calls, or none (default MEDMMV_CACHE)").choices(["off", "deterministic", "all"]))
    .option("--no-expansion", "ablation: one rollout path, still refined")
    .option("--no-hd", "ablation: no hallucination detection / repair")
    .option("--no-text-doctor", "ablation: no TextDoctor evidence")
    .option("--no-image-doctor", "ablation: no ImageDoctor evidence")
    .option("--no-web-search", "ablation: no web-search evidence")
    .addOption(new Option("--select <rule>", "how the final path is chosen").choices(["cu", "random", "majority"]))
    .option("--concurrency <n>", "items in flight (lowered automatically when the provider rate-limits); default MEDMMV_MAX_CONCURRENCY, printed at start", int(1, 256))
    .option("--workers <n>", "answer the items in N processes, one per core to use (the full method is CPU-bound on one core near its concurrency); MEDMMV_MAX_CONCURRENCY is split between them; not with --method stagewise or --stage-judge", int(1, 64))
    .option("--resume", "continue the run in --out: skip finished items, retry failed ones")
    .option("--replay-cache <dir>", "answer run r from the responses kept in run r of this finished eval folder (DIR/responses.jsonl), never from the model: a call DIR lacks stops the run")
    .option("--replay-cache-then-call", "with --replay-cache: a call the folder lacks goes to the model instead of stopping the run")
    .option("--where <field=values>", "only items whose field has one of the values, e.g. body_system=Cardiovascular,Respiratory (repeatable; the dataset's own fields)", (v: string, prev: string[] = []) => [...prev, v])
    .option("--max-cost <usd>", "stop starting items once the run's cost (at MEDMMV_PRICES) plus what the items in flight are expected to cost reaches USD; running items finish", usd)
    .option("--max-tokens <n>", "the same for tokens (prompt + completion, raters included)", int(1, Number.MAX_SAFE_INTEGER))
    .option("--raters <models>", "reliability raters (model names on the same endpoint): T, I, T×I, CMHR", list)
    .option("--save-results", "medmmv only (refused for the other methods): also write each item's DiagnosisResult with the full evidence graph to DIR/results/ (the record names its file; `medmmv report FILE -o x.html` renders it offline)")
    .option("--out <dir>", "results folder")
    .option("--json", "print summary.json instead of the Markdown summary");
  for (const st of STUDIES) for (const f of st.flags ?? []) cmd.addOption(studyOption(f));
  cmd
    .action(async (opts: EvalCliOptions) => {
      process.exitCode = await evalAction(opts);
    });

  cmd
    .command("export-traces")
    .description("write a stagewise run's traces as ClinHallu files (model_cot.jsonl, replace/replace_{vr,kr,vr_kr}.jsonl)")
    .argument("<dir>", "an eval --out folder of --dataset clinhallu --method stagewise")
    .requiredOption("--to <dir>", "folder to write them into (ClinHallu's results/<dataset>/eval/<model>/ layout)")
    .option("--run <r>", "which run of the folder (0)", int(0, 99), 0)
    .action(async (dir: string, opts: { to: string; run: number }) => {
      process.exitCode = await exportTracesAction(dir, opts);
    });

  cmd
    .command("report")
    .description("compare eval folders side by side (deltas against the first)")
    .argument("<dirs...>", "eval --out folders")
    .option("--json", "print the summaries as JSON")
    .option("--out <dir>", "also write DIR/report.md, DIR/report.json (with the paired comparison) and DIR/summary.html (tables and plots); with --table/--by, DIR/table.md and DIR/table.json")
    .addOption(new Option("--table <layout>", "pool the folders (one method: e.g. its Text and MM runs) into a leaderboard's table: medxpertqa = Text × MM × Reasoning/Understanding with pooled averages, as the official notebook computes them").choices(["medxpertqa"]))
    .option("--by <fields>", "pool the folders into a crossed breakdown by these fields, e.g. body_system,question_type (rows by the first, columns by the last)", list)
    .option("--pool-different", "with --table/--by: pool folders even when their method or configuration differs (the report names the differences)")
    .action(async (dirs: string[], opts: ReportCliOptions) => {
      process.exitCode = await reportAction(dirs, opts);
    });

  cmd
    .command("export")
    .description("write a run's records as a flat table: one row per item-run (prediction, gold, correct, status, cost, tokens, strata)")
    .argument("<dir>", "an eval --out folder")
    .addOption(new Option("--format <format>", "csv (RFC 4180, UTF-8; loads in pandas.read_csv)").choices(["csv", "parquet"]).default("csv"))
    .option("--to <file>", "write to FILE instead of standard output")
    .action(async (dir: string, opts: { format: "csv" | "parquet"; to?: string }) => {
      process.exitCode = await exportAction(dir, opts);
    });

  cmd
    .command("calibrate")
    .description("propose the answerSupport (or vote-share) threshold that keeps the error rate of the answers acted on under a target, tuned on this run")
    .argument("<dir>", "an eval --out folder")
    .requiredOption("--target-risk <r>", "highest acceptable error rate among the answers kept, e.g. 0.1", riskArg)
    .option("--json", "print the proposal as JSON")
    .action(async (dir: string, opts: { targetRisk: number; json?: boolean }) => {
      process.exitCode = await calibrateAction(dir, opts);
    });
}
