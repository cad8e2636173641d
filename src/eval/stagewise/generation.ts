import type { AgentDeps } from "../../core/agents/agent-context.js";
import { runStagewiseContinuation, runStagewiseTrace, type TraceFormatName } from "../agents/stagewise-trace.js";
import type { PreparedCase } from "../../core/contracts/clinical-case.js";
import { isMedmmvError, MedmmvError, type ErrorCode } from "../../core/contracts/errors.js";
import type { CallContext } from "../../core/llm/model-client.js";
import { completeTrace, parseTrace, renderTrace, validateStages, validateTrace } from "./trace-parser.js";
import type { JudgedTrace, ReplacementKey, StageTrace } from "./types.js";

export interface GenerationOptions {
  format: TraceFormatName;
  temperature: number;
  /** Re-tries of an invalid trace (ClinHallu: the same request re-sent); then the trace stays invalid. */
  retries: number;
}

function judgedTrace(stages: StageTrace, raw: string, check: { valid: boolean; reason: string }, attempts: number): JudgedTrace {
  return { stages, raw, valid: check.valid, validation: check.reason, attempts, answerCorrect: null, answerReason: "" };
}

/** Where a generation resumes (an invalid attempt a killed run checkpointed), and where each invalid attempt with re-tries left goes. */
export interface AttemptHooks {
  from?: JudgedTrace;
  onInvalid?: (t: JudgedTrace) => Promise<void>;
}

/** The model call failed for good (after the client's own retries): ClinHallu's `api_failed`. */
const API_FAILURES: ReadonlySet<ErrorCode> = new Set(["LLM_RETRYABLE", "LLM_FATAL", "LLM_TIMEOUT", "LLM_BAD_OUTPUT"]);

/**
 * A generation whose call failed for good becomes an invalid, empty trace marked
 * `apiFailed`, as ClinHallu writes an `api_failed` record into the one file concerned: the
 * item's other traces (its baseline, the other replacements) keep their results; the failed
 * one is out of Acc and its stages count hallucinated. Cancellation and configuration
 * errors still stop the item.
 */
function apiFailedTrace(err: unknown, signal: AbortSignal | undefined): Omit<JudgedTrace, "attempts" | "answerCorrect" | "answerReason"> {
  if (signal?.aborted) throw err instanceof MedmmvError ? err : new MedmmvError("ABORTED", "eval cancelled", { cause: err });
  if (!isMedmmvError(err) || !API_FAILURES.has(err.code)) throw err;
  return { stages: { visual: "", knowledge: "", reasoning: "", answer: "" }, raw: "", valid: false, validation: `api_failed (${err.code})`, apiFailed: true };
}

/** Ask until the trace is valid or the re-tries are spent; the last attempt is kept either way. */
async function untilValid(retries: number, attempt: () => Promise<Omit<JudgedTrace, "attempts" | "answerCorrect" | "answerReason">>, hooks: AttemptHooks = {}, signal?: AbortSignal): Promise<JudgedTrace> {
  let last: JudgedTrace | null = hooks.from ? { ...hooks.from } : null;
  for (let n = (last?.attempts ?? 0) + 1; n <= 1 + retries; n++) {
    const t = await attempt().catch((err: unknown) => apiFailedTrace(err, signal));
    if (t.apiFailed) return { ...t, attempts: n, answerCorrect: null, answerReason: "" };
    last = { ...t, attempts: n, answerCorrect: null, answerReason: "" };
    if (last.valid) break;
    if (n < 1 + retries) await hooks.onInvalid?.({ ...last, retrying: true });
  }
  delete last!.retrying;
  return last!;
}

/** The baseline trace: one structured call, or ClinHallu's free-text protocol parsed by its rules. */
export async function generateTrace(deps: AgentDeps, ctx: CallContext, c: PreparedCase, o: GenerationOptions, hooks?: AttemptHooks): Promise<JudgedTrace> {
  return untilValid(o.retries, async () => {
    const out = await runStagewiseTrace(deps, ctx, c, { format: o.format, temperature: o.temperature });
    if ("trace" in out) {
      const parsed = parseTrace(out.trace);
      return judgedTrace(completeTrace(parsed), out.trace, validateTrace(parsed), 0);
    }
    const stages: StageTrace = { visual: out.visualRecognition.trim(), knowledge: out.knowledgeRecall.trim(), reasoning: out.reasoning.trim(), answer: out.answer.trim() };
    return judgedTrace(stages, renderTrace(stages), validateStages(stages), 0);
  }, hooks, ctx.signal);
}

/**
 * The stages a replacement setting hands the model (reference §1.4): Rep-V the gold visual
 * stage; Rep-K the model's own visual stage (omitted when empty) and the gold knowledge;
 * Rep-VK both gold stages.
 */
export function givenStages(setting: ReplacementKey, reference: StageTrace, own: StageTrace): Partial<StageTrace> {
  if (setting === "V") return { visual: reference.visual };
  if (setting === "K") return { visual: own.visual, knowledge: reference.knowledge };
  return { visual: reference.visual, knowledge: reference.knowledge };
}

/**
 * One replacement run. The stored raw trace is the given stages in header format plus the
 * model's continuation, parsed and validated like any trace; as in ClinHallu, a text
 * continuation that repeats a given header replaces that stage.
 */
export async function generateReplacement(
  deps: AgentDeps,
  ctx: CallContext,
  c: PreparedCase,
  input: { setting: ReplacementKey; reference: StageTrace; own: StageTrace },
  o: GenerationOptions,
  hooks?: AttemptHooks,
): Promise<JudgedTrace> {
  const given = givenStages(input.setting, input.reference, input.own);
  const prefix = renderTrace(given, { answer: false });
  return untilValid(o.retries, async () => {
    const out = await runStagewiseContinuation(deps, ctx, c, { given: prefix, writeKnowledge: input.setting === "V", format: o.format, temperature: o.temperature });
    if ("continuation" in out) {
      const raw = `${prefix}\n\n${out.continuation}`;
      const parsed = parseTrace(raw);
      return judgedTrace(completeTrace(parsed), raw, validateTrace(parsed), 0);
    }
    const stages: StageTrace = {
      visual: (given.visual ?? "").trim(),
      knowledge: (out.knowledgeRecall ?? given.knowledge ?? "").trim(),
      reasoning: out.reasoning.trim(),
      answer: out.answer.trim(),
    };
    return judgedTrace(stages, renderTrace(stages), validateStages(stages), 0);
  }, hooks, ctx.signal);
}
