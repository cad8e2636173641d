import type { AgentDeps } from "../../core/agents/agent-context.js";
import type { PreparedCase } from "../../core/contracts/clinical-case.js";
import type { Prices } from "../../core/config.js";
import { describeError, MedmmvError } from "../../core/contracts/errors.js";
import { addUsage, CallChain, UsageMeter } from "../../core/llm/usage.js";
import type { EvalItem } from "../datasets/types.js";
import { noDiagnostics, type EvalMethod, type MethodOutput, type MethodRunContext } from "../methods/types.js";
import { generateReplacement, generateTrace, type GenerationOptions } from "./generation.js";
import { committedAnswer, judgeAnswer, judgeStages } from "./judging.js";
import { JUDGED_STAGES, REPLACEMENTS, type JudgedTrace, type ReplacementKey, type StagewiseRecord } from "./types.js";

export interface StagewiseOptions extends GenerationOptions {
  /** Replacement settings to run; null = all three where the item has a reference trace and no --traces. */
  replace: ReplacementKey[] | null;
  /** Settle an answer that is exactly an option's letter without the judge (ours; ClinHallu always asks the judge). */
  letterShortcut?: boolean;
}

export const STAGEWISE_PROMPTS = (format: GenerationOptions["format"]) => ["system", format === "text" ? "stagewise-trace-text" : "stagewise-trace", "stagewise-continue", "answer-judge", "stage-judge"];

function fromExternal(item: EvalItem): JudgedTrace {
  const e = item.stagewise?.external;
  if (!e) return { stages: { visual: "", knowledge: "", reasoning: "", answer: "" }, raw: "", valid: false, validation: "no trace for this sample in --traces", attempts: 0, answerCorrect: null, answerReason: "" };
  return { stages: { ...e.stages }, raw: e.raw, valid: e.valid, validation: e.validation, attempts: 0, answerCorrect: null, answerReason: "" };
}

/**
 * ClinHallu's protocol on one item (docs/evaluation.md#stage-wise-hallucination-diagnosis-clinhallu): the baseline trace (generated, or read from
 * --traces), the answer judge and the stage judge on it, and the replacement runs Rep-V,
 * Rep-K, Rep-VK, each judged on the stages ClinHallu scores for it. Every finished phase is
 * checkpointed into results.jsonl, so a killed run resumes where it stopped; phases that
 * do not depend on each other (the baseline's judging, the three replacements) run at once.
 */
export function stagewiseMethod(deps: AgentDeps, prices: Prices, o: StagewiseOptions): EvalMethod {
  return {
    name: "stagewise",
    prompts: STAGEWISE_PROMPTS(o.format),
    async run(c: PreparedCase, signal: AbortSignal, rc?: MethodRunContext): Promise<MethodOutput> {
      if (!rc) throw new MedmmvError("INTERNAL", "the stagewise method needs the runner's item context");
      const started = Date.now();
      const item = rc.item;
      const reference = item.stagewise?.reference ?? null;
      const external = item.stagewise?.external !== undefined;
      const prev = rc.previous?.stagewise ? rc.previous : undefined;
      const state: StagewiseRecord = prev?.stagewise
        ? structuredClone(prev.stagewise)
        : { format: external ? "external" : o.format, hasReference: reference !== null, trace: null, judged: {}, replacements: {} };
      const meter = new UsageMeter(prices);
      const ctx = { caseKey: c.id, meter, chain: new CallChain(meter), signal };
      const usage = () => {
        const now = meter.snapshot(Date.now() - started);
        return prev ? addUsage(prev.usage, now) : now;
      };
      const output = (status: MethodOutput["status"], extra: Partial<MethodOutput> = {}): MethodOutput => {
        const t = state.trace;
        return {
          status,
          answer: t && t.stages.answer !== "" ? committedAnswer(t.stages.answer, c.options) : null,
          usage: usage(),
          ...noDiagnostics(),
          stagewise: state,
          rationale: t?.raw ?? "",
          ...extra,
        };
      };
      // Checkpoints coalesce: verdicts that arrive while one is being written (and synced) go
      // into the next line together, which holds the state as it is when that write starts.
      let chain: Promise<void> = Promise.resolve();
      let queued = false;
      const save = (): Promise<void> => {
        if (queued) return chain;
        queued = true;
        chain = chain.then(() => {
          queued = false;
          return rc.checkpoint(output("failed", { error: { code: "INCOMPLETE", message: "stage-wise phases unfinished" } }));
        });
        return chain;
      };
      const gen = { format: o.format, temperature: o.temperature, retries: o.retries };
      try {
        // Invalid attempts with re-tries left are checkpointed too: a resumed run goes on counting.
        if (!state.trace || state.trace.retrying) {
          const hooks = { from: state.trace ?? undefined, onInvalid: async (t: JudgedTrace) => ((state.trace = t), save()) };
          state.trace = external ? fromExternal(item) : await generateTrace(deps, ctx, c, gen, hooks);
          await save();
        }
        const trace = state.trace;
        const settings = reference === null ? [] : (o.replace ?? (external ? [] : [...REPLACEMENTS]));
        // Each verdict is checkpointed as it arrives: a killed run re-pays only the calls in flight.
        const answerThenSave = async (t: JudgedTrace) => {
          if (!t.valid || t.answerCorrect !== null) return;
          await judgeAnswer(deps, ctx, c, item.gold, t, { letterShortcut: o.letterShortcut });
          // A letter match cost nothing: no checkpoint line for it.
          if (t.answerBy === "judge") await save();
        };
        const baseline = async () => {
          await Promise.all([answerThenSave(trace), judgeStages(deps, ctx, c, { gold: item.gold, reference, candidate: trace.stages, stages: JUDGED_STAGES.baseline, judged: state.judged, apiFailed: trace.apiFailed === true }, save)]);
        };
        const replacement = async (s: ReplacementKey) => {
          const before = state.replacements[s];
          if (!before || before.trace.retrying) {
            const hooks = { from: before?.trace, onInvalid: async (t: JudgedTrace) => ((state.replacements[s] = { trace: t, judged: {} }), save()) };
            state.replacements[s] = { trace: await generateReplacement(deps, ctx, c, { setting: s, reference: reference!, own: trace.stages }, gen, hooks), judged: {} };
            await save();
          }
          const r = state.replacements[s]!;
          await Promise.all([answerThenSave(r.trace), judgeStages(deps, ctx, c, { gold: item.gold, reference, candidate: r.trace.stages, stages: JUDGED_STAGES[s], judged: r.judged, apiFailed: r.trace.apiFailed === true }, save)]);
        };
        // allSettled: a phase that fails must not return while its siblings still write checkpoints.
        const settled = await Promise.allSettled([baseline(), ...settings.map(replacement)]);
        const failed = settled.find((r): r is PromiseRejectedResult => r.status === "rejected");
        if (failed) throw failed.reason;
      } catch (err) {
        if (signal.aborted) throw err instanceof MedmmvError ? err : new MedmmvError("ABORTED", "eval cancelled", { cause: err });
        return output("failed", { error: describeError(err) });
      }
      const t = state.trace;
      // An invalid trace is no answer: ClinHallu leaves it out of accuracy; here it abstains.
      if (!t.valid) return output("abstained", { abstentionReason: `invalid trace: ${t.validation}`, correct: false });
      return output("completed", { correct: t.answerCorrect === 1 });
    },
  };
}

/** The run's label: trace format, and where the traces came from. */
export function stagewiseLabel(o: StagewiseOptions, external: boolean): string {
  if (external) return `stagewise (--traces${o.replace?.length ? `, rep ${o.replace.join(",")}` : ""})`;
  const rep = o.replace === null ? "V,K,VK" : o.replace.length ? o.replace.join(",") : "none";
  return `stagewise (${o.format}, rep ${rep})`;
}
