import { mkdir } from "node:fs/promises";
import path from "node:path";
import type { Usage } from "../core/contracts/diagnosis-result.js";
import { prepareCase } from "../core/intake/case-intake.js";
import { intakeSettings } from "../core/intake/intake-settings.js";
import { unpricedModels, withCatalogPrices, type Config } from "../core/config.js";
import { describeError, MedmmvError } from "../core/contracts/errors.js";
import type { PipelineOverrides } from "../core/workflow/pipeline.js";
import type { PipelineOptions } from "../core/workflow/state.js";
import type { ResponseCache } from "../core/llm/model-client.js";
import { addUsage, UsageMeter } from "../core/llm/usage.js";
import { VERSION } from "../core/version.js";
import { openSearchProvider } from "../core/search/create-search-provider.js";
import type { SearchProvider } from "../core/search/search-provider.js";
import { isCorrect } from "./answer-match.js";
import { getAdapter, isItemError, type EvalItem, type ItemError, type JsonlFieldMap } from "./datasets/index.js";
import { NO_IMAGES_FOLDER } from "./datasets/common.js";
import { writeJsonAtomic, type RunManifest } from "./manifest.js";
import { failedOutput, METHOD_NAMES, noDiagnostics, type MethodName, type MethodOutput } from "./methods/types.js";
import type { ProgressSink } from "./progress.js";
import { openRunSession } from "./run-session.js";
import { buildRaters, rateOutput, type Rater } from "./raters.js";
import { buildSummary, summaryMarkdown } from "./report.js";
import { SUMMARY_HTML, SUMMARY_JSON, SUMMARY_MD, type EvalSummary } from "./summary.js";
import { compactResults, readResults, recordKey, RESULTS_FILE, ResultsWriter, type ResultRecord } from "./results-file.js";
import { claimRunFolder, manifestSource } from "./run-folder.js";
import { cacheScopeFor } from "./run-cache.js";
import { loadSummaryPageOnFirstRequest, summaryPage } from "./summary-page.js";
import { selectItems } from "./sampling.js";
import { stagewiseLabel, type StagewiseOptions } from "./stagewise/stagewise-method.js";
import { runGated } from "./gated-tasks.js";
import { itemMethods, type ItemMethodSettings } from "./item-methods.js";
import { ItemWorkerPool, type ItemProcessStats, type ItemWorkerEntry } from "./item-workers.js";
import { saveDiagnosis } from "./saved-results.js";
import { assertRunPriced, RunBudget, type ItemSpend } from "./run-budget.js";
import { expandProbes, probeConfig, probeLabel } from "./probes/expand-items.js";
import { HYPOTHESIS_KINDS, type HypothesisKind } from "./probes/types.js";
import { openEndedItem } from "./open/open-items.js";
import { pinInput, productPin } from "./input-pins.js";
import { predictionOf } from "./prediction.js";
import { FolderResponses, recordingCache, replayingCache, RESPONSES_FILE } from "./run-responses.js";

export interface EvalRunOptions {
  dataset: string;
  input: string;
  images?: string;
  missingImages?: "error" | "text-only";
  copBase?: 0 | 1 | "auto";
  fieldMap?: JsonlFieldMap;
  limit?: number;
  sample?: number;
  stratify?: string[];
  seed?: number;
  /** Independent repetitions of every item (accuracy is reported as mean ± std over runs). */
  runs?: number;
  method?: MethodName;
  /** k, maxRepairs, adaptive, select, ablations… (k also sets self-consistency's sample count). */
  pipeline?: PipelineOverrides;
  /** Items in flight (model calls in flight are capped separately by MEDMMV_MAX_CONCURRENCY). */
  concurrency?: number;
  resume?: boolean;
  raters?: string[];
  out: string;
  /** Extra attempts for an item that failed with a transient error (429/5xx/timeout out of retries). */
  itemRetries?: number;
  /** Robustness probe: a clinician's right or wrong hypothesis before each question (docs/evaluation.md#robustness-probes). */
  hypothesis?: HypothesisKind;
  /** Robustness probe: N seeded option orders per item, each its own item `id#p1`…. */
  shuffleOptions?: number;
  /** false: the prompts without the "a claim to check" sentence, as Dr-LLaVA's probes ran (src/eval/probes/reference-prompts.ts). */
  hypothesisWarning?: boolean;
  /** --method stagewise (ClinHallu): trace format, replacement settings, re-tries of invalid traces, temperature. */
  stagewise?: Partial<StagewiseOptions>;
  /** ClinHallu model_cot.jsonl whose traces are judged instead of generated (--traces). */
  traces?: string;
  /** --stage-judge on medmmv / cot: judge the final path's steps by stage, on ClinHallu's scale. */
  stageJudge?: boolean;
  /** A finished eval folder whose responses (DIR/responses.jsonl) this one replays (its run r answers run r); a call it lacks fails the run, unless replayThenCall. */
  replayCache?: string;
  /** --replay-cache-then-call: a call the replayed folder lacks goes to the model instead of failing the run. */
  replayThenCall?: boolean;
  /** --where: only items whose field has one of the values (the dataset's own fields). */
  where?: Record<string, string[]>;
  /** MedMMV: also write each item's DiagnosisResult with its full evidence graph to DIR/results/ (saved-results.ts). */
  saveResults?: boolean;
  /** --max-cost / --max-tokens: stop starting items once the run's spending reaches them (run-budget.ts). */
  maxCostUsd?: number;
  maxTokens?: number;
  /** --workers: answer the items in this many processes (item-workers.ts); 1 (the default): in this one. */
  workers?: number;
  /** --open: multiple-choice items asked without their options, open answers graded by the equivalence judge (src/eval/open/). */
  open?: boolean;
}

export interface EvalRunDeps {
  config: Config;
  signal?: AbortSignal;
  /** Where progress goes (a terminal gets a live bar); null for none. */
  progress?: ProgressSink | null;
  progressIntervalMs?: number;
  /** Response cache for deterministic calls (the case store's, in the CLI). */
  cache?: ResponseCache | null;
  /** Minimum time between two cuts of the item concurrency. */
  throttleCooldownMs?: number;
  /** How to start an item process when `workers` > 1 (the CLI: itself). */
  itemWorkerEntry?: ItemWorkerEntry;
}

export interface EvalRunResult {
  dir: string;
  summary: EvalSummary;
  /** Stopped by the signal before every item ran. */
  interrupted: boolean;
  /** Records written in this session. */
  written: number;
  /** --max-cost / --max-tokens stopped the run before every item started (--resume with a larger limit continues). */
  budgetReached: boolean;
  /** What the run folder's records spent in all (tokens, dollars at the configured prices). */
  spent: ItemSpend;
  /** With --workers: each item process and the items it answered. */
  itemProcesses?: ItemProcessStats[];
}

/** What one record cost: its method's usage and its raters'. */
function recordSpend(r: ResultRecord): ItemSpend {
  const rating = r.ratingUsage;
  return {
    tokens: r.usage.promptTokens + r.usage.completionTokens + (rating ? rating.promptTokens + rating.completionTokens : 0),
    costUsd: r.usage.costUsd + (rating?.costUsd ?? 0),
  };
}

const TRANSIENT = new Set(["LLM_RETRYABLE", "LLM_TIMEOUT", "RATE_LIMITED"]);

/** A failure worth another try: the provider was overloaded or slow, not the item bad. */
function isTransient(out: MethodOutput): boolean {
  if (out.status !== "failed") return false;
  if (out.error && TRANSIENT.has(out.error.code)) return true;
  return out.errors.length > 0 && out.errors.every((e) => TRANSIENT.has(e.code));
}

function labelFor(method: MethodName, p: PipelineOptions): string {
  if (method === "cot") return "cot";
  if (method === "self-consistency") return `self-consistency (k=${p.k})`;
  const tags: string[] = [];
  const a = p.ablations;
  if (a.noExpansion) tags.push("no-expansion");
  if (a.noHd) tags.push("no-hd");
  if (a.noTextDoctor) tags.push("no-text-doctor");
  if (a.noImageDoctor) tags.push("no-image-doctor");
  if (a.noWebSearch) tags.push("no-web-search");
  if (p.select !== "cu") tags.push(`select=${p.select}`);
  if (p.adaptive) tags.push("adaptive");
  return tags.length ? `medmmv (${tags.join(", ")})` : "medmmv";
}

/**
 * The settings that change a method's answers (recorded, and compared on --resume).
 * `searchProvider` is the provider the pipeline runs with, not the MEDMMV_SEARCH setting:
 * unset, that setting says "none" even where the default finds an indexed corpus.
 */
export function methodConfig(method: MethodName, p: PipelineOptions, config: Config, searchProvider: SearchProvider["name"]): Record<string, unknown> {
  const common = { structuredOutput: config.llm.structuredOutput };
  if (method === "cot") return { ...common, temperature: 0 };
  if (method === "self-consistency") return { ...common, k: p.k, temperature: p.rolloutTemperature };
  const { seed, ...rest } = p;
  return { ...common, ...rest, seedBase: seed, searchProvider };
}

/** Items in flight by default: as many as the provider budget lets calls run (MEDMMV_MAX_CONCURRENCY), so the budget, not a fixed 4, sets the pace. */
export function defaultConcurrency(config: Config): number {
  return Math.max(1, Math.min(256, config.llm.maxConcurrency));
}

function emptyUsage(wallMs = 0): Usage {
  return new UsageMeter().snapshot(wallMs);
}

function check(ok: boolean, message: string): void {
  if (!ok) throw new MedmmvError("INVALID_INPUT", message);
}

/**
 * Run a method over a dataset. Each finished item is appended (and synced) to
 * DIR/results.jsonl at once; --resume skips (id, run) pairs already finished and retries
 * failed ones; at the end DIR/summary.json and DIR/summary.md describe every planned item.
 */
export async function runEval(o: EvalRunOptions, deps: EvalRunDeps): Promise<EvalRunResult> {
  // Raters are models the configuration does not name: the catalog prices those it knows, as it
  // does the configured ones (MEDMMV_PRICES still wins), so a rater is unpriced only where no one states its price.
  let config = withCatalogPrices(deps.config, o.raters ?? []);
  const method: MethodName = o.method ?? "medmmv";
  const runs = o.runs ?? 1;
  const concurrency = o.concurrency ?? defaultConcurrency(config);
  const itemRetries = o.itemRetries ?? 2;
  check((METHOD_NAMES as readonly string[]).includes(method), `unknown method "${method}"; use one of ${METHOD_NAMES.join(", ")}`);
  check(Number.isInteger(runs) && runs >= 1, "--runs must be an integer ≥ 1");
  check(Number.isInteger(concurrency) && concurrency >= 1, "--concurrency must be an integer ≥ 1");
  check(o.hypothesis === undefined || (HYPOTHESIS_KINDS as readonly string[]).includes(o.hypothesis), `unknown hypothesis "${o.hypothesis}"; use one of ${HYPOTHESIS_KINDS.join(", ")}`);
  const probeOpts = { hypothesis: o.hypothesis, shuffleOptions: o.shuffleOptions, seed: o.seed ?? 1 };
  const probes = probeConfig(probeOpts);
  check(o.dataset !== "healthbench" || (method !== "stagewise" && !o.stageJudge), "--dataset healthbench grades replies by their rubric: use --method medmmv, cot or self-consistency, without --stage-judge");
  check(!o.stageJudge || method === "medmmv" || method === "cot", "--stage-judge applies to --method medmmv or cot (stagewise judges its stages anyway)");
  check(o.traces === undefined || (method === "stagewise" && o.dataset === "clinhallu"), "--traces needs --dataset clinhallu --method stagewise");
  const workers = o.workers ?? 1;
  check(Number.isInteger(workers) && workers >= 1, "--workers must be an integer ≥ 1");
  // Their phases are checkpointed into results.jsonl as they finish, by the runner's one writer.
  check(workers === 1 || (method !== "stagewise" && !o.stageJudge), "--method stagewise and --stage-judge run in one process (they checkpoint each phase as it ends): leave out --workers");
  check(workers === 1 || deps.itemWorkerEntry !== undefined, "--workers needs a way to start the item processes (EvalRunDeps.itemWorkerEntry)");
  check(o.fieldMap === undefined || o.dataset === "jsonl", `--field-map applies to --dataset jsonl only (--dataset ${o.dataset} reads its published layout)`);
  check(!o.replayCache || method !== "self-consistency", "--replay-cache cannot replay --method self-consistency: its k samples share one prompt, so no cache can tell them apart");
  check(!o.replayThenCall || o.replayCache !== undefined, "--replay-cache-then-call needs --replay-cache DIR");
  check(!o.saveResults || method === "medmmv", `--save-results writes MedMMV's DiagnosisResult with its evidence graph; --method ${method} has none (its records keep each model reply's raw text: see \`calls\`)`);
  // Replaying, every call is looked up (sampled ones too): none may reach the model unnoticed.
  if (o.replayCache) config = { ...config, llm: { ...config.llm, cache: "all" } };
  const sw: StagewiseOptions = { format: "structured", replace: null, retries: 2, temperature: 0.7, ...o.stagewise };
  const adapter = getAdapter(o.dataset);
  const input = path.resolve(o.input);
  const dir = path.resolve(o.out);
  await mkdir(dir, { recursive: true });
  const resultsPath = path.join(dir, RESULTS_FILE);

  // One pipeline per run, each seeing the response cache through its run's namespace: runs are fresh draws, never each other's replay.
  const cacheScope = await cacheScopeFor(dir, o);
  // The folder keeps its own calls' responses (what --replay-cache of it replays); replaying reads only the replayed folder's.
  const ownResponses = await FolderResponses.open(dir, { append: true });
  let replayMiss: MedmmvError | null = null;
  let stopOnMiss = () => undefined as void;
  const runCache = o.replayCache
    ? replayingCache(await FolderResponses.open(path.resolve(o.replayCache), { append: false }), ownResponses, {
        thenCall: o.replayThenCall === true,
        onMiss: () => {
          replayMiss ??= new MedmmvError("NOT_FOUND", `--replay-cache: a call of this run is missing from ${path.join(path.resolve(o.replayCache!), RESPONSES_FILE)}; the run stopped without asking the model (items finished so far are kept). Record with --cache all to keep sampled calls, or pass --replay-cache-then-call`);
          stopOnMiss();
        },
      })
    : config.llm.cache === "off"
      ? null
      : recordingCache(ownResponses, deps.cache ?? null);
  const search = await openSearchProvider(config);
  const settings: ItemMethodSettings = { dataset: o.dataset, method, pipeline: o.pipeline, stagewise: sw, stageJudge: o.stageJudge, hypothesisWarning: o.hypothesisWarning, saveResults: o.saveResults, ...(o.open ? { open: true } : {}) };
  const { popts, pipelineFor, methodFor } = itemMethods(settings, config, { cache: runCache, cacheScope, search });
  const pipeline = pipelineFor(0);
  const raterModels = [...new Set(o.raters ?? [])];
  const raters: Rater[] = buildRaters(config, { prompts: pipeline.prompts, search: pipeline.search }, pipeline.limiter, raterModels);
  const promptNames = [...methodFor(0).prompts, ...(raters.length ? ["rater"] : [])];

  const manifest: RunManifest = {
    ...manifestSource({ dataset: adapter.name, input, images: o.images, missingImages: o.missingImages }),
    copBase: o.copBase ?? "auto",
    fieldMap: o.fieldMap ?? null,
    method,
    label: (method === "stagewise" ? stagewiseLabel(sw, o.traces !== undefined) : labelFor(method, popts) + (o.stageJudge ? " + stage judge" : "")) + probeLabel(probeOpts) + (o.hypothesisWarning === false ? " [no hypothesis warning]" : "") + (o.open ? " [open-ended]" : ""),
    runs,
    concurrency,
    selection: { sample: o.sample ?? null, stratify: o.stratify ?? [], seed: o.seed ?? 1, limit: o.limit ?? null, ...(o.where ? { where: o.where } : {}) },
    inputFile: await pinInput(input),
    product: await productPin(),
    unpriced: [],
    config: {
      ...(method === "stagewise" ? { structuredOutput: config.llm.structuredOutput, ...sw, traces: o.traces ? path.resolve(o.traces) : null } : { ...methodConfig(method, popts, config, pipeline.search.name), ...(o.stageJudge ? { stageJudge: true } : {}) }),
      ...(probes ? { probes } : {}),
      ...(o.hypothesisWarning === false ? { hypothesisWarning: false } : {}),
      ...(o.open ? { open: true } : {}),
    },
    models: method === "medmmv" ? pipeline.llm.models() : method === "stagewise" || o.stageJudge ? { executor: pipeline.llm.modelFor("executor"), judge: pipeline.llm.modelFor("judge") } : { executor: pipeline.llm.modelFor("executor") },
    raters: raterModels,
    prompts: pipeline.prompts.hashes(promptNames),
    cacheScope,
    createdAt: new Date().toISOString(),
    version: VERSION,
  };

  manifest.unpriced = unpricedModels([...Object.values(manifest.models), ...raterModels], config.llm.prices);
  // Without prices a cost limit could never be reached: refuse it before the folder is claimed.
  assertRunPriced(config, o.maxCostUsd, raterModels);

  const all: Array<EvalItem | ItemError> = [];
  for await (const x of adapter.read(input, { imagesDir: o.images, missingImages: o.missingImages, medmcqaCopBase: o.copBase, fieldMap: o.fieldMap, tracesFile: o.traces })) all.push(o.open && !isItemError(x) ? openEndedItem(x) : x);
  const details = adapter.describe?.() ?? {};
  const { selected: drawn, report: selection } = selectItems(
    all.map((x) => ({ id: x.id, strata: isItemError(x) ? {} : x.strata, x })),
    { sample: o.sample, stratify: o.stratify, seed: o.seed, limit: o.limit, where: o.where },
  );
  // Multimodal items without their images would fail one by one after their calls: refused before any.
  const needImages = o.images === undefined ? drawn.filter((s) => isItemError(s.x) && s.x.error.message.includes(NO_IMAGES_FOLDER)) : [];
  if (needImages.length > 0)
    throw new MedmmvError("INVALID_INPUT", `${needImages.length} of the ${drawn.length} selected items have images (e.g. ${needImages[0]!.id}) and no images folder was given: pass --images DIR, or --missing-images text-only to run them without (flagged)`);
  // The folder is claimed (eval.json written) only once the items are known to be runnable: a refusal above leaves it as it was.
  const existing = await claimRunFolder(dir, manifest, o.resume, config);
  // Probes apply to the drawn items: every permutation of a sampled item is planned, each its own (id, run).
  const probed = expandProbes(drawn.map((s) => s.x), probeOpts);
  const selected = probed.items.map((x) => ({ id: x.id, x }));
  if (probes) details["probes"] = { ...probes, notMultipleChoice: probed.skipped };

  const done = new Map(existing.records.filter((r) => r.status !== "failed").map((r) => [recordKey(r.id, r.run), r]));
  // Unfinished phased work (stage-wise checkpoints) a killed run left, by (id, run); updated as this run checkpoints.
  const partials = new Map(existing.records.filter((r) => r.status === "failed" && (r.stagewise || r.steps)).map((r) => [recordKey(r.id, r.run), r]));
  const planned = new Set<string>();
  const tasks: Array<{ x: EvalItem | ItemError; run: number }> = [];
  for (let run = 0; run < runs; run++)
    for (const s of selected) {
      const key = recordKey(s.id, run);
      planned.add(key);
      if (!done.has(key)) tasks.push({ x: s.x, run });
    }

  // The results file first: a run that cannot write it has opened nothing else.
  const writer = await ResultsWriter.open(resultsPath);
  const session = openRunSession({ planned, done, concurrency, deps });
  stopOnMiss = () => session.abort();
  if (manifest.unpriced?.length) session.state.unpriced = true;
  const budget = new RunBudget({ maxCostUsd: o.maxCostUsd, maxTokens: o.maxTokens }, session.resumed.map(recordSpend));
  const { startedAt, state, gate, progress, signal } = session;
  let fatal: unknown = null;
  let written = 0;
  let checkpoints = 0;

  // Started in the try below, whose finally ends everything the run opened: a fork can throw
  // (the process table or memory is full), and the writer and the session must not outlive it.
  let pool: ItemWorkerPool | null = null;

  const runTask = async (x: EvalItem | ItemError, run: number, release: () => void): Promise<void> => {
    budget.started();
    let spend: ItemSpend | null = null;
    try {
      spend = await recordTask(x, run, release);
    } finally {
      budget.ended(spend);
    }
  };

  /** Runs one task and records it; what it cost, or null when it was not recorded. */
  const recordTask = async (x: EvalItem | ItemError, run: number, release: () => void): Promise<ItemSpend | null> => {
    const started = Date.now();
    const base = { id: x.id, run, method, strata: isItemError(x) ? {} : x.strata, ...noDiagnostics() };
    let record: ResultRecord;
    if (isItemError(x)) {
      record = { ...base, status: "failed", answer: null, prediction: null, gold: { kind: "open", text: "" }, correct: false, usage: emptyUsage(), error: x.error, attempts: 0, finishedAt: new Date().toISOString() };
    } else {
      record = await runItem(x, run, base, started);
      // Cut short by cancellation: not an answer, so not recorded; --resume runs it again.
      if (signal.aborted && record.status === "failed") return null;
    }
    // The item's model work is done: its slot goes to the next item while the record is synced.
    release();
    await writer.append(record);
    written++;
    state.done++;
    if (record.correct) state.correct++;
    if (record.status === "failed") state.failed++;
    const spend = recordSpend(record);
    state.tokens += spend.tokens;
    state.costUsd += spend.costUsd;
    if (record.status !== "failed") gate.onSuccess();
    progress?.update();
    // An unreadable item cost nothing and says nothing about what items cost.
    return isItemError(x) ? null : spend;
  };

  const runItem = async (item: EvalItem, run: number, base: Omit<ResultRecord, "status" | "answer" | "gold" | "correct" | "usage" | "attempts" | "finishedAt">, started: number): Promise<ResultRecord> => {
    const finish = (out: MethodOutput, attempts: number): ResultRecord => {
      const r: ResultRecord = {
        ...base,
        ...out,
        gold: item.gold,
        prediction: predictionOf(out.status, out.answer, item.gold, item.case.options),
        correct: out.status === "completed" && (out.correct ?? isCorrect(out.answer, item.gold)),
        attempts,
        finishedAt: new Date().toISOString(),
      };
      delete (r as Partial<MethodOutput>).rationale;
      delete (r as Partial<MethodOutput>).diagnosis;
      if (item.probe) Object.assign(r, item.probe);
      if (item.warnings?.length) r.warnings = item.warnings;
      return r;
    };

    let prepared;
    try {
      prepared = await prepareCase(item.case, { ...intakeSettings(config), allowPath: true });
    } catch (err) {
      return finish(failedOutput(describeError(err), emptyUsage(Date.now() - started)), 0);
    }
    // Runs of one item may be in flight together: give each its own case id (the pipeline's thread key).
    prepared = { ...prepared, id: `${prepared.id}:r${run}` };
    const m = pool ? pool.method(methodFor(run), item, run) : methodFor(run);
    let usage: Usage | null = null;
    let out: MethodOutput;
    let attempts = 0;
    const key = recordKey(item.id, run);
    const context = {
      item,
      get previous() {
        return partials.get(key);
      },
      checkpoint: async (partial: MethodOutput) => {
        const r = { ...finish(partial, attempts), status: "failed" as const, correct: false };
        await writer.append(r);
        checkpoints++;
        partials.set(key, r);
      },
    };
    for (;;) {
      attempts++;
      // A phased method resumed from a checkpoint reports the checkpoint's usage plus its own.
      const cumulative = partials.has(key);
      try {
        out = await m.run(prepared, signal, context);
      } catch (err) {
        out = failedOutput(describeError(err), emptyUsage());
      }
      usage = usage && !cumulative ? addUsage(usage, out.usage) : out.usage;
      if (signal.aborted || !isTransient(out) || attempts > itemRetries) break;
      // The provider is struggling: start fewer items, then try this one again.
      gate.onRateLimited();
    }
    out = { ...out, usage: { ...usage, wallMs: Date.now() - started } };
    const record = finish(out, attempts);
    if (o.saveResults && out.diagnosis) record.resultFile = await saveDiagnosis(dir, item.id, run, out.diagnosis);
    if (raters.length && out.status !== "failed" && out.rationale && !signal.aborted) {
      try {
        const rated = await rateOutput(raters, prepared, out.rationale, item.gold, config.llm.prices, signal);
        record.ratings = rated.ratings;
        if (rated.errors.length) record.ratingErrors = rated.errors;
        record.ratingUsage = rated.usage;
      } catch (err) {
        if (!signal.aborted) throw err;
        return finish(failedOutput({ code: "ABORTED", message: "eval cancelled" }, usage), attempts);
      }
    }
    return record;
  };

  progress?.start();
  const stopPageLoad = loadSummaryPageOnFirstRequest();
  const stopPool = () => pool?.abort();
  signal.addEventListener("abort", stopPool, { once: true });
  // Every model client of this run shares the pipeline's limiter, which hears each 429.
  const unwatch = pipeline.limiter.onRateLimited(() => gate.onRateLimited());
  try {
    if (workers > 1) pool = new ItemWorkerPool({ count: ItemWorkerPool.size(workers, config), entry: deps.itemWorkerEntry!, config, settings, cacheScope, cache: runCache, onRateLimited: () => gate.onRateLimited() });
    await pool?.ready();
    fatal = await runGated(tasks, gate, signal, (t, release) => runTask(t.x, t.run, release), () => session.abort(), () => budget.admit());
  } finally {
    stopPageLoad();
    unwatch();
    signal.removeEventListener("abort", stopPool);
    await pool?.close();
    session.end();
    await writer.close();
    await ownResponses.close();
  }
  if (replayMiss) throw replayMiss;
  if (fatal) throw fatal instanceof MedmmvError ? fatal : new MedmmvError("STORE_FAILED", `writing ${resultsPath} failed: ${describeError(fatal).message}`, { cause: fatal });
  // Phase checkpoints are superseded once their items finish: keep the file to one line per item-run.
  if (checkpoints > 0 && !signal.aborted) await compactResults(resultsPath);

  const { records } = await readResults(resultsPath);
  const inPlan = records.filter((r) => planned.has(recordKey(r.id, r.run)));
  const summary = buildSummary(inPlan, manifest, {
    planned: planned.size,
    complete: inPlan.filter((r) => r.status !== "failed").length === planned.size,
    throttle: gate.stats(),
    elapsedMs: Date.now() - startedAt.getTime(),
    startedAt: startedAt.toISOString(),
    details,
    selection,
  });
  await writeJsonAtomic(path.join(dir, SUMMARY_JSON), summary);
  const md = summaryMarkdown(summary);
  await writeJsonAtomic(path.join(dir, SUMMARY_MD), md);
  const { summaryHtml } = await summaryPage();
  await writeJsonAtomic(path.join(dir, SUMMARY_HTML), await summaryHtml(summary, md));
  return { dir, summary, interrupted: signal.aborted && tasks.length > written, written, budgetReached: budget.stopped, spent: budget.total(), ...(pool ? { itemProcesses: pool.stats() } : {}) };
}
