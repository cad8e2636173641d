import { setMaxListeners } from "node:events";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import type { AgentDeps } from "../../agents/agent-context.js";
import type { Usage } from "../../case/diagnosis-result.js";
import { prepareCase } from "../../case/images.js";
import type { PreparedCase } from "../../case/schema.js";
import type { Config } from "../../config.js";
import { answerTurn, turnEvidence, type PriorTurn, type TurnEvidence } from "../../conversation/answer-turn.js";
import { describeError, MedmmvError } from "../../errors.js";
import { Pipeline, pipelineOptions, type PipelineOverrides } from "../../graph/pipeline.js";
import type { ResponseCache } from "../../llm/model-client.js";
import { CallChain, UsageMeter } from "../../llm/usage.js";
import { VERSION } from "../../version.js";
import type { ItemError } from "../datasets/types.js";
import { MANIFEST_FILE, writeJsonAtomic, type RunManifest } from "../manifest.js";
import { NO_HALLUCINATIONS } from "../methods/types.js";
import { buildSummary, SUMMARY_JSON, SUMMARY_MD, summaryMarkdown, type EvalSummary } from "../report.js";
import { readResults, RESULTS_FILE, ResultsWriter, type ResultRecord } from "../results-file.js";
import { readConversationJsonl, readDrLlava } from "./datasets.js";
import { metricsByOrder } from "./metrics.js";
import { orderTurns } from "./orders.js";
import { QUESTION_ORDERS, type ConversationDatasetName, type ConversationItem, type ConversationOutcome, type QuestionOrder, type TurnOutcome } from "./types.js";

export interface ConversationEvalOptions {
  dataset: ConversationDatasetName;
  input: string;
  images?: string;
  missingImages?: "error" | "text-only";
  method?: "medmmv" | "cot";
  orders?: QuestionOrder[];
  seed?: number;
  limit?: number;
  pipeline?: PipelineOverrides;
  concurrency?: number;
  out: string;
}

/** A results.jsonl line of a conversation eval: one item in one order. */
export type ConversationRecord = ResultRecord & { conversation: ConversationOutcome };

function check(ok: boolean, message: string): void {
  if (!ok) throw new MedmmvError("INVALID_INPUT", message);
}

/**
 * `medmmv eval --dataset drllava|conversation`: every conversation is walked turn by turn
 * in each requested order (si, df, ii), by `cot` (one model, the conversation history in
 * the prompt) or `medmmv` (the case through the pipeline once, then each turn answered over
 * its evidence graph and checked by the hd-supervisor). Each answer is labelled at its step;
 * summary.json carries `conversation: { <order>: { aQ, aC, aD, hCC } }`.
 */
export async function runConversationEval(o: ConversationEvalOptions, deps: { config: Config; signal?: AbortSignal; cache?: ResponseCache | null }): Promise<{ dir: string; summary: EvalSummary }> {
  const { config } = deps;
  const method = o.method ?? "medmmv";
  const orders = [...new Set(o.orders?.length ? o.orders : QUESTION_ORDERS)];
  const seed = o.seed ?? 1;
  const concurrency = o.concurrency ?? 4;
  check(method === "medmmv" || method === "cot", `--method ${method} does not run conversations; use medmmv or cot`);
  check(orders.every((x) => (QUESTION_ORDERS as readonly string[]).includes(x)), `--order takes ${QUESTION_ORDERS.join(", ")}`);
  const input = path.resolve(o.input);
  const dir = path.resolve(o.out);
  await mkdir(dir, { recursive: true });
  const resultsPath = path.join(dir, RESULTS_FILE);
  const existing = await readResults(resultsPath);
  if (existing.lines > 0 || existing.tornTail) throw new MedmmvError("CONFLICT", `${dir} already holds results; choose another --out (conversation evals do not resume)`);

  const popts = pipelineOptions(config, o.pipeline);
  const pipeline = new Pipeline(config, { cache: deps.cache ?? null });
  const agents: AgentDeps = { llm: pipeline.llm, prompts: pipeline.prompts, search: pipeline.search };
  const prompts = method === "medmmv" ? ["system", "rollout", "hd-supervisor", "auto-repair", "coherence-judge", "turn-answer", "pathway-judge"] : ["system", "turn-answer", "pathway-judge"];
  const manifest: RunManifest = {
    schema: "medmmv-eval-run/1",
    dataset: o.dataset,
    input,
    images: o.images ? path.resolve(o.images) : null,
    missingImages: o.missingImages ?? "error",
    copBase: "auto",
    fieldMap: null,
    method,
    label: `${method} (conversation: ${orders.join(", ")})`,
    runs: 1,
    concurrency,
    selection: { sample: null, stratify: [], seed, limit: o.limit ?? null },
    config: { orders, seed, ...(method === "medmmv" ? { k: popts.k, maxRepairs: popts.maxRepairs } : {}), structuredOutput: config.llm.structuredOutput },
    models: method === "medmmv" ? pipeline.llm.models() : { executor: pipeline.llm.modelFor("executor") },
    raters: [],
    prompts: pipeline.prompts.hashes(prompts),
    createdAt: new Date().toISOString(),
    version: VERSION,
  };
  await writeJsonAtomic(path.join(dir, MANIFEST_FILE), manifest);

  const items: Array<ConversationItem | ItemError> = [];
  const reader = o.dataset === "drllava" ? readDrLlava : readConversationJsonl;
  for await (const x of reader(input, { imagesDir: o.images, missingImages: o.missingImages })) {
    items.push(x);
    if (o.limit !== undefined && items.length >= o.limit) break;
  }

  const ctrl = new AbortController();
  const onAbort = () => ctrl.abort();
  deps.signal?.addEventListener("abort", onAbort, { once: true });
  setMaxListeners(0, ctrl.signal);
  const writer = await ResultsWriter.open(resultsPath);
  const startedAt = new Date();

  const record = (id: string, order: QuestionOrder, outcome: ConversationOutcome, usage: Usage, gold: string, error?: { code: string; message: string }): ConversationRecord => {
    const diagnosisTurn = outcome.turns.filter((t) => t.step === outcome.diagnosisStep).at(-1);
    return {
      id: `${id}@${order}`,
      run: 0,
      method,
      status: outcome.failed ? "failed" : "completed",
      answer: diagnosisTurn ? { option: null, text: diagnosisTurn.answer } : null,
      gold: { kind: "open", text: gold },
      correct: !outcome.failed && outcome.turns.length > 0 && outcome.turns.every((t) => t.correct),
      strata: { order },
      usage,
      cu: null,
      answerSupport: null,
      stability: null,
      hallucinations: { ...NO_HALLUCINATIONS },
      errors: [],
      ...(error ? { error } : {}),
      attempts: 1,
      finishedAt: new Date().toISOString(),
      conversation: outcome,
    };
  };

  const walk = async (c: PreparedCase, x: ConversationItem, order: QuestionOrder, evidence: TurnEvidence | null, meter: UsageMeter): Promise<ConversationOutcome> => {
    const planned = orderTurns(x.turns, order, x.pathway, seed, x.item.id);
    const history: PriorTurn[] = [];
    const turns: TurnOutcome[] = [];
    for (const spec of planned) {
      if (ctrl.signal.aborted) throw new MedmmvError("ABORTED", "eval cancelled");
      const t = await answerTurn(agents, { caseKey: c.id, meter, chain: new CallChain(meter, 0), signal: ctrl.signal }, { case: c, pathway: x.pathway, evidence, history, request: { question: spec.question, step: spec.step } });
      history.push(t);
      turns.push({ turn: t.turn, question: spec.question, step: spec.step, expected: spec.expected, answer: t.answer, category: t.category, correct: t.category === spec.expected, contextConflict: t.contextConflict });
    }
    return { order, diagnosisStep: x.pathway.steps.at(-1)!.id, planned: planned.length, turns, failed: false };
  };

  const runItem = async (x: ConversationItem | ItemError): Promise<void> => {
    if ("error" in x) {
      const empty = new UsageMeter().snapshot(0);
      for (const order of orders) await writer.append(record(x.id, order, { order, diagnosisStep: "", planned: 0, turns: [], failed: true }, empty, "", x.error));
      return;
    }
    const started = Date.now();
    const caseMeter = new UsageMeter(config.llm.prices);
    let c: PreparedCase;
    let evidence: TurnEvidence | null = null;
    try {
      c = await prepareCase(x.item.case, { allowPath: true, maxBytes: config.http.maxImageBytes, maxPixels: config.http.maxImagePixels });
      if (method === "medmmv") {
        const run = await pipeline.run(c, popts, { signal: ctrl.signal });
        caseMeter.absorb(run.result.usage);
        if (run.result.status === "failed") throw new MedmmvError("PIPELINE_FAILED", run.result.error?.message ?? "the pipeline failed");
        evidence = turnEvidence(run.fullEvidenceGraph);
      }
    } catch (err) {
      const usage = caseMeter.snapshot(Date.now() - started);
      for (const order of orders) await writer.append(record(x.item.id, order, { order, diagnosisStep: x.pathway.steps.at(-1)!.id, planned: x.turns.length, turns: [], failed: true }, usage, x.item.gold.text, describeError(err)));
      return;
    }
    // The case's own run is paid once: it goes on the first order's record.
    let first = true;
    for (const order of orders) {
      const t0 = Date.now();
      const meter = new UsageMeter(config.llm.prices);
      if (first) meter.absorb(caseMeter.snapshot(0));
      let outcome: ConversationOutcome;
      let error: { code: string; message: string } | undefined;
      try {
        outcome = await walk(c, x, order, evidence, meter);
      } catch (err) {
        error = describeError(err);
        outcome = { order, diagnosisStep: x.pathway.steps.at(-1)!.id, planned: x.turns.length, turns: [], failed: true };
      }
      await writer.append(record(x.item.id, order, outcome, meter.snapshot(Date.now() - (first ? started : t0)), x.item.gold.text, error));
      first = false;
    }
  };

  try {
    const queue = [...items];
    await Promise.all(
      Array.from({ length: Math.min(concurrency, queue.length) }, async () => {
        for (let x = queue.shift(); x !== undefined && !ctrl.signal.aborted; x = queue.shift()) await runItem(x);
      }),
    );
  } finally {
    deps.signal?.removeEventListener("abort", onAbort);
    await writer.close();
  }

  const { records } = await readResults(resultsPath);
  const planned = items.length * orders.length;
  const base = buildSummary(records, manifest, {
    planned,
    complete: records.filter((r) => r.status !== "failed").length === planned,
    elapsedMs: Date.now() - startedAt.getTime(),
    startedAt: startedAt.toISOString(),
    details: {
      orders,
      note: "accuracy = A_C (conversations with every turn correct); per order in `conversation`. H_cc is per conversation.",
    },
  });
  const summary: EvalSummary = { ...base, conversation: metricsByOrder((records as ConversationRecord[]).map((r) => r.conversation)) };
  await writeJsonAtomic(path.join(dir, SUMMARY_JSON), summary);
  await writeJsonAtomic(path.join(dir, SUMMARY_MD), summaryMarkdown(summary));
  return { dir, summary };
}
