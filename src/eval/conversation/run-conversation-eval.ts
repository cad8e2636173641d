import { createHash } from "node:crypto";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import type { AgentDeps } from "../../core/agents/agent-context.js";
import type { Usage } from "../../core/contracts/diagnosis-result.js";
import { prepareCase } from "../../core/intake/case-intake.js";
import { intakeSettings } from "../../core/intake/intake-settings.js";
import type { PreparedCase } from "../../core/contracts/clinical-case.js";
import type { Config } from "../../core/config.js";
import { answerTurn, turnEvidence, type PriorTurn, type TurnEvidence } from "../../core/conversation/answer-turn.js";
import { describeError, MedmmvError } from "../../core/contracts/errors.js";
import { pipelineOptions, type PipelineOverrides } from "../../core/workflow/pipeline.js";
import { cacheScopeFor, runPipelines } from "../run-cache.js";
import type { ResponseCache } from "../../core/llm/model-client.js";
import { CallChain, UsageMeter } from "../../core/llm/usage.js";
import { openSearchProvider } from "../../core/search/create-search-provider.js";
import { canonicalJson } from "../../core/contracts/canonical-json.js";
import { VERSION } from "../../core/version.js";
import type { ItemError } from "../datasets/types.js";
import { writeJsonAtomic, type RunManifest } from "../manifest.js";
import { noDiagnostics } from "../methods/types.js";
import { buildSummary, summaryMarkdown } from "../report.js";
import { loadSummaryPageOnFirstRequest, summaryPage } from "../summary-page.js";
import { SUMMARY_HTML, SUMMARY_JSON, SUMMARY_MD, type EvalSummary } from "../summary.js";
import type { ProgressSink } from "../progress.js";
import { openRunSession } from "../run-session.js";
import { readResults, recordKey, RESULTS_FILE, ResultsWriter, type ResultRecord } from "../results-file.js";
import { claimRunFolder, manifestSource } from "../run-folder.js";
import { pinInput, productPin } from "../input-pins.js";
import { methodConfig } from "../runner.js";
import { runGated } from "../gated-tasks.js";
import { probedQuestion, turnStatement } from "../probes/conversation-hypothesis.js";
import { probeLabel } from "../probes/expand-items.js";
import { referencePromptLibrary } from "../probes/reference-prompts.js";
import { HYPOTHESIS_KINDS, type HypothesisKind } from "../probes/types.js";
import { readConversationJsonl, readDrLlava } from "./datasets.js";
import { metricsByOrder } from "./metrics.js";
import { orderTurns } from "./orders.js";
import { DEFAULT_ORDERS, QUESTION_ORDERS, type ConversationDatasetName, type ConversationItem, type ConversationOutcome, type QuestionOrder, type TurnOutcome } from "./types.js";

export interface ConversationEvalOptions {
  dataset: ConversationDatasetName;
  input: string;
  images?: string;
  missingImages?: "error" | "text-only";
  method?: "medmmv" | "cot";
  orders?: QuestionOrder[];
  seed?: number;
  limit?: number;
  /** Independent repetitions of every conversation (the pipeline's seed moves with the run). */
  runs?: number;
  pipeline?: PipelineOverrides;
  /** Conversations in flight; the turns of one conversation are always asked in order. */
  concurrency?: number;
  /** Continue the run in `out`: finished conversations are kept, failed ones are asked again. */
  resume?: boolean;
  /** Robustness probe, turn by turn (src/eval/probes/conversation-hypothesis.ts): CQ/RQ, right or wrong. */
  hypothesis?: HypothesisKind;
  /** false: the prompts without the "a claim to check" sentence (src/eval/probes/reference-prompts.ts). */
  hypothesisWarning?: boolean;
  out: string;
}

export interface ConversationEvalDeps {
  config: Config;
  signal?: AbortSignal;
  cache?: ResponseCache | null;
  /** Where progress goes (a terminal gets a live bar); null or absent for none. */
  progress?: ProgressSink | null;
  progressIntervalMs?: number;
  /** Minimum time between two cuts of the conversation concurrency. */
  throttleCooldownMs?: number;
}

export interface ConversationEvalResult {
  dir: string;
  summary: EvalSummary;
  /** Stopped by the signal before every conversation ran. */
  interrupted: boolean;
  /** Conversations recorded in this session. */
  written: number;
}

/**
 * A results.jsonl line of a conversation eval: one item in one order (in one run). The record
 * that paid for a medmmv pipeline run keeps its evidence graph (`caseEvidence`), so a resume
 * answers that item's unfinished orders over it instead of paying for the pipeline again.
 */
export type ConversationRecord = ResultRecord & { conversation: ConversationOutcome; caseEvidence?: Record<string, unknown> | null };

function check(ok: boolean, message: string): void {
  if (!ok) throw new MedmmvError("INVALID_INPUT", message);
}

/** What every order of one (item, run) shares: the prepared case and, for medmmv, the pipeline's evidence. */
interface CaseSetup {
  c: PreparedCase | null;
  evidence: TurnEvidence | null;
  /** The pipeline's evidence graph as the paying record stores it (medmmv, run in this session). */
  saved: Record<string, unknown> | null;
  usage: Usage;
  error?: { code: string; message: string };
}

/**
 * `medmmv eval --dataset drllava|conversation`: every conversation is walked turn by turn
 * in each requested order (si, df, ii), by `cot` (one model, the conversation history in
 * the prompt) or `medmmv` (the case through the pipeline once per run, then each turn
 * answered over its evidence graph and checked by the hd-supervisor). Each answer is
 * labelled at its step; summary.json carries `conversation: { <order>: { aQ, aC, aD, hCC } }`.
 * Each finished conversation (item × order × run) is appended and synced to results.jsonl
 * at once, so --resume re-asks only the conversations a killed run had not finished.
 */
export async function runConversationEval(o: ConversationEvalOptions, deps: ConversationEvalDeps): Promise<ConversationEvalResult> {
  const { config } = deps;
  const method = o.method ?? "medmmv";
  const orders = [...new Set(o.orders?.length ? o.orders : DEFAULT_ORDERS)];
  const seed = o.seed ?? 1;
  const runs = o.runs ?? 1;
  const concurrency = o.concurrency ?? 4;
  check(method === "medmmv" || method === "cot", `--method ${method} does not run conversations; use medmmv or cot`);
  check(orders.every((x) => (QUESTION_ORDERS as readonly string[]).includes(x)), `--order takes ${QUESTION_ORDERS.join(", ")}`);
  check(Number.isInteger(runs) && runs >= 1, "--runs must be an integer ≥ 1");
  check(Number.isInteger(concurrency) && concurrency >= 1, "--concurrency must be an integer ≥ 1");
  check(o.hypothesis === undefined || (HYPOTHESIS_KINDS as readonly string[]).includes(o.hypothesis), `--hypothesis takes ${HYPOTHESIS_KINDS.join(", ")}`);
  const input = path.resolve(o.input);
  const dir = path.resolve(o.out);
  await mkdir(dir, { recursive: true });
  const resultsPath = path.join(dir, RESULTS_FILE);

  const items: Array<ConversationItem | ItemError> = [];
  const reader = o.dataset === "drllava" ? readDrLlava : readConversationJsonl;
  for await (const x of reader(input, { imagesDir: o.images, missingImages: o.missingImages })) {
    items.push(x);
    if (o.limit !== undefined && items.length >= o.limit) break;
  }

  // The pathways the records walk decide what each answer is labelled and what conflicts: a resume may not change them.
  const pathways = Object.fromEntries(items.flatMap((x) => ("error" in x ? [] : [[x.pathway.id, "sha256:" + createHash("sha256").update(canonicalJson(x.pathway)).digest("hex")]])).sort(([a], [b]) => (a! < b! ? -1 : 1)));
  const popts = pipelineOptions(config, o.pipeline);
  // One pipeline per run, each seeing the response cache through its run's namespace (run-cache.ts):
  // runs are fresh draws from the model, never each other's replay. They share one limiter.
  const cacheScope = await cacheScopeFor(dir, { resume: o.resume });
  const search = await openSearchProvider(config);
  const promptLibrary = o.hypothesisWarning === false ? { prompts: referencePromptLibrary() } : {};
  const pipelineFor = runPipelines(config, deps.cache ?? null, cacheScope, { search, ...promptLibrary });
  const pipeline = pipelineFor(0);
  const agentsFor = (run: number): AgentDeps => ({ llm: pipelineFor(run).llm, prompts: pipeline.prompts, search });
  const prompts = method === "medmmv" ? ["system", "rollout", "hd-supervisor", "auto-repair", "coherence-judge", "turn-answer", "pathway-judge"] : ["system", "turn-answer", "pathway-judge"];
  const manifest: RunManifest = {
    ...manifestSource({ dataset: o.dataset, input, images: o.images, missingImages: o.missingImages }),
    // The file's bytes and the product that ran: --resume refuses another file (run-folder.ts).
    inputFile: await pinInput(input),
    product: await productPin(),
    copBase: "auto",
    fieldMap: null,
    method,
    label: `${method} (conversation: ${orders.join(", ")})${probeLabel({ hypothesis: o.hypothesis })}${o.hypothesisWarning === false ? " [no hypothesis warning]" : ""}`,
    runs,
    concurrency,
    selection: { sample: null, stratify: [], seed, limit: o.limit ?? null },
    // Orders and seed decide which questions are asked in which order: a resume may not change them.
    config: { ...methodConfig(method, popts, config, pipeline.search.name), orders, seed, pathways, ...(o.hypothesis ? { probes: { hypothesis: o.hypothesis, seed } } : {}), ...(o.hypothesisWarning === false ? { hypothesisWarning: false } : {}) },
    models: method === "medmmv" ? pipeline.llm.models() : { executor: pipeline.llm.modelFor("executor") },
    raters: [],
    prompts: pipeline.prompts.hashes(prompts),
    cacheScope,
    createdAt: new Date().toISOString(),
    version: VERSION,
  };
  const existing = await claimRunFolder(dir, manifest, o.resume, config);

  const idOf = (x: ConversationItem | ItemError) => ("error" in x ? x.id : x.item.id);
  const done = new Map(existing.records.filter((r) => r.status !== "failed").map((r) => [recordKey(r.id, r.run), r]));
  const planned = new Set<string>();
  const tasks: Array<{ x: ConversationItem | ItemError; run: number; order: QuestionOrder }> = [];
  for (let run = 0; run < runs; run++)
    for (const x of items)
      for (const order of orders) {
        const key = recordKey(`${idOf(x)}@${order}`, run);
        planned.add(key);
        if (!done.has(key)) tasks.push({ x, run, order });
      }

  const session = openRunSession({ planned, done, concurrency, deps });
  const { startedAt, state, gate, progress, signal } = session;
  const writer = await ResultsWriter.open(resultsPath);
  const unwatch = pipeline.limiter.onRateLimited(() => gate.onRateLimited());
  let fatal: unknown = null;
  let written = 0;

  const record = (id: string, run: number, order: QuestionOrder, outcome: ConversationOutcome, usage: Usage, gold: string, error?: { code: string; message: string }, warnings?: string[]): ConversationRecord => {
    const diagnosisTurn = outcome.turns.filter((t) => t.step === outcome.diagnosisStep).at(-1);
    return {
      id: `${id}@${order}`,
      run,
      method,
      status: outcome.failed ? "failed" : "completed",
      answer: diagnosisTurn ? { option: null, text: diagnosisTurn.answer } : null,
      gold: { kind: "open", text: gold },
      correct: !outcome.failed && outcome.turns.length > 0 && outcome.turns.every((t) => t.correct),
      strata: { order },
      usage,
      ...noDiagnostics(),
      ...(error ? { error } : {}),
      // What the reader decided about the record (a gold answer that names no category…), as item runs keep it.
      ...(warnings?.length ? { warnings } : {}),
      attempts: 1,
      finishedAt: new Date().toISOString(),
      conversation: outcome,
    };
  };

  const walk = async (c: PreparedCase, x: ConversationItem, order: QuestionOrder, evidence: TurnEvidence | null, meter: UsageMeter, run: number): Promise<ConversationOutcome> => {
    const agents = agentsFor(run);
    const planned = orderTurns(x.turns, order, x.pathway, seed, x.item.id);
    const history: PriorTurn[] = [];
    const turns: TurnOutcome[] = [];
    for (const [index, spec] of planned.entries()) {
      if (signal.aborted) throw new MedmmvError("ABORTED", "eval cancelled");
      const hypothesis = o.hypothesis ? turnStatement(o.hypothesis, planned, index, x.pathway, seed, `${x.item.id}\u0000${order}`) : null;
      const question = probedQuestion(spec.question, hypothesis);
      const t = await answerTurn(agents, { caseKey: c.id, meter, chain: new CallChain(meter, 0), signal }, { case: c, pathway: x.pathway, evidence, history, request: { question, step: spec.step } });
      history.push(t);
      turns.push({
        turn: t.turn,
        question,
        step: spec.step,
        expected: spec.expected,
        answer: t.answer,
        category: t.category,
        correct: t.category === spec.expected,
        contextConflict: t.contextConflict,
        ...(spec.expectedFrom ? { expectedFrom: spec.expectedFrom } : {}),
        ...(spec.goldUnlabelled ? { goldUnlabelled: true as const } : {}),
        ...(hypothesis ? { hypothesis } : {}),
      });
    }
    return { order, diagnosisStep: x.pathway.steps.at(-1)!.id, planned: planned.length, turns, failed: false };
  };

  // The orders of one (item, run) share one case preparation (and medmmv pipeline run); the first
  // conversation recorded with it pays for it, so the summary counts each call once. A setup is
  // dropped when the last of its conversations in this session ends, so evidence graphs do not pile up.
  const setups = new Map<string, { promise: Promise<CaseSetup>; paid: boolean; left: number }>();
  // A finished record of an earlier session that paid for an (item, run)'s pipeline, by (item, run).
  const paidBefore = new Map<string, Record<string, unknown>>();
  for (const r of done.values()) {
    const ev = (r as ConversationRecord).caseEvidence;
    if (ev) paidBefore.set(recordKey(r.id.slice(0, r.id.lastIndexOf("@")), r.run), ev);
  }
  const prepare = async (x: ConversationItem, run: number): Promise<CaseSetup> => {
    const started = Date.now();
    const before = method === "medmmv" ? paidBefore.get(recordKey(x.item.id, run)) : undefined;
    const meter = new UsageMeter(config.llm.prices);
    let c: PreparedCase | null = null;
    try {
      c = await prepareCase(x.item.case, { ...intakeSettings(config), allowPath: true });
      // Runs of one item may be in flight together: each its own case id (the pipeline's thread key).
      c = { ...c, id: `${c.id}:r${run}` };
      let evidence: TurnEvidence | null = null;
      let saved: Record<string, unknown> | null = null;
      if (before) evidence = turnEvidence(before);
      else if (method === "medmmv") {
        const out = await pipelineFor(run).run(c, { ...popts, seed: popts.seed + run }, { signal });
        meter.absorb(out.result.usage);
        if (out.result.status === "failed") throw new MedmmvError("PIPELINE_FAILED", out.result.error?.message ?? "the pipeline failed");
        evidence = turnEvidence(out.fullEvidenceGraph);
        saved = out.fullEvidenceGraph;
      }
      return { c, evidence, saved, usage: meter.snapshot(Date.now() - started) };
    } catch (err) {
      return { c, evidence: null, saved: null, usage: meter.snapshot(Date.now() - started), error: describeError(err) };
    }
  };
  const lefts = new Map<string, number>();
  for (const t of tasks) {
    if ("error" in t.x) continue;
    const key = recordKey(t.x.item.id, t.run);
    lefts.set(key, (lefts.get(key) ?? 0) + 1);
  }
  const setupFor = (x: ConversationItem, run: number) => {
    const key = recordKey(x.item.id, run);
    let s = setups.get(key);
    if (!s) setups.set(key, (s = { promise: prepare(x, run), paid: false, left: lefts.get(key) ?? 1 }));
    return { shared: s, release: () => --s.left === 0 && setups.delete(key) };
  };

  const runConversation = async (x: ConversationItem | ItemError, run: number, order: QuestionOrder): Promise<ConversationRecord | null> => {
    if ("error" in x) return record(x.id, run, order, { order, diagnosisStep: "", planned: 0, turns: [], failed: true }, new UsageMeter().snapshot(0), "", x.error);
    const started = Date.now();
    const diagnosisStep = x.pathway.steps.at(-1)!.id;
    const { shared, release } = setupFor(x, run);
    try {
      const setup = await shared.promise;
      const meter = new UsageMeter(config.llm.prices);
      const pays = !shared.paid;
      if (pays) meter.absorb(setup.usage);
      shared.paid = true;
      let outcome: ConversationOutcome = { order, diagnosisStep, planned: x.turns.length, turns: [], failed: true };
      let error = setup.error;
      if (!error && setup.c)
        try {
          outcome = await walk(setup.c, x, order, setup.evidence, meter, run);
        } catch (err) {
          error = describeError(err);
        }
      // Cut short by cancellation: not an answer, so not recorded (nor its share paid); --resume asks it again.
      if (signal.aborted && outcome.failed) {
        if (pays) shared.paid = false;
        return null;
      }
      const r = record(x.item.id, run, order, outcome, meter.snapshot(Date.now() - started), x.item.gold.text, error, x.item.warnings);
      // Kept only on a finished record: a failed one is asked again, and its replacement pays anew.
      if (pays && setup.saved && !outcome.failed) r.caseEvidence = setup.saved;
      return r;
    } finally {
      release();
    }
  };

  const runTask = async (x: ConversationItem | ItemError, run: number, order: QuestionOrder): Promise<void> => {
    const r = await runConversation(x, run, order);
    if (!r) return;
    await writer.append(r);
    written++;
    state.done++;
    if (r.correct) state.correct++;
    if (r.status === "failed") state.failed++;
    state.tokens += r.usage.promptTokens + r.usage.completionTokens;
    state.costUsd += r.usage.costUsd;
    if (r.status !== "failed") gate.onSuccess();
    progress?.update();
  };

  progress?.start();
  const stopPageLoad = loadSummaryPageOnFirstRequest();
  try {
    fatal = await runGated(tasks, gate, signal, (t) => runTask(t.x, t.run, t.order), () => session.abort());
  } finally {
    stopPageLoad();
    unwatch();
    session.end();
    await writer.close();
  }
  if (fatal) throw fatal instanceof MedmmvError ? fatal : new MedmmvError("STORE_FAILED", `writing ${resultsPath} failed: ${describeError(fatal).message}`, { cause: fatal });

  const { records } = await readResults(resultsPath);
  const inPlan = records.filter((r) => planned.has(recordKey(r.id, r.run))) as ConversationRecord[];
  const base = buildSummary(inPlan, manifest, {
    planned: planned.size,
    complete: inPlan.filter((r) => r.status !== "failed").length === planned.size,
    throttle: gate.stats(),
    elapsedMs: Date.now() - startedAt.getTime(),
    startedAt: startedAt.toISOString(),
    details: {
      orders,
      note: "accuracy = A_C (conversations with every turn correct); per order in `conversation`. H_cc is per conversation.",
    },
  });
  const summary: EvalSummary = { ...base, conversation: metricsByOrder(inPlan.map((r) => r.conversation)) };
  await writeJsonAtomic(path.join(dir, SUMMARY_JSON), summary);
  const md = summaryMarkdown(summary);
  await writeJsonAtomic(path.join(dir, SUMMARY_MD), md);
  const { summaryHtml } = await summaryPage();
  await writeJsonAtomic(path.join(dir, SUMMARY_HTML), await summaryHtml(summary, md));
  return { dir, summary, interrupted: signal.aborted && tasks.length > written, written };
}
