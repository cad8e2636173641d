import { runCot, type CotOutput } from "../agents/cot.js";
import { runStagedCot } from "../agents/cot-staged.js";
import type { AgentDeps } from "../../core/agents/agent-context.js";
import type { PreparedCase } from "../../core/contracts/clinical-case.js";
import type { Prices } from "../../core/config.js";
import { describeError, MedmmvError } from "../../core/contracts/errors.js";
import { CallChain, UsageMeter } from "../../core/llm/usage.js";
import { extractOptionLetter, withoutPassages } from "../answer-match.js";
import { hypothesisStatements } from "../probes/hypothesis.js";
import { noDiagnostics, type EvalMethod, type MethodOutput } from "./types.js";

/**
 * The answer a CoT reply commits to, mapped onto the case's options: the `option` field
 * when it is a valid letter (models write "C", "(C)", "c"), else a letter the answer text
 * or, failing that, the reasoning commits to. With no letter the text stays, and grading
 * falls back to comparing it with the gold option's text. `ignore` holds passages of the
 * case (a probe's clinician statement) whose quotation commits the reply to nothing.
 */
export function commitAnswer(out: CotOutput, options: Record<string, string> | undefined, ignore: readonly string[] = []): { option: string | null; text: string } {
  const letters = options ? Object.keys(options) : [];
  if (letters.length === 0 || !options) return { option: null, text: out.answer.text.trim() };
  const raw = (out.answer.option ?? "").replace(/[^A-Za-z]/g, "").toUpperCase();
  const letter = raw.length === 1 && options[raw] !== undefined ? raw : (extractOptionLetter(withoutPassages(out.answer.text, ignore), letters) ?? extractOptionLetter(withoutPassages(out.reasoning, ignore), letters));
  return letter ? { option: letter, text: options[letter]! } : { option: null, text: out.answer.text.trim() };
}

/**
 * Zero-shot chain of thought: one executor call at temperature 0. `staged` (for
 * --stage-judge) asks for stage-tagged steps instead of one reasoning text.
 */
export function cotMethod(deps: AgentDeps, prices: Prices, opts: { staged?: boolean } = {}): EvalMethod {
  return {
    name: "cot",
    prompts: ["system", opts.staged ? "cot-staged" : "cot"],
    async run(c: PreparedCase, signal: AbortSignal): Promise<MethodOutput> {
      const started = Date.now();
      const meter = new UsageMeter(prices);
      const base = noDiagnostics();
      try {
        const ctx = { caseKey: c.id, meter, chain: new CallChain(meter), signal };
        if (opts.staged) {
          const staged = await runStagedCot(deps, ctx, c, { temperature: 0 });
          const out: CotOutput = { reasoning: staged.steps.map((s) => s.text).join("\n"), answer: staged.answer };
          const answer = commitAnswer(out, c.options, hypothesisStatements(c));
          return { ...base, status: "completed", answer, usage: meter.snapshot(Date.now() - started), rationale: rationaleOf(out, answer), steps: staged.steps };
        }
        const out = await runCot(deps, ctx, c, { temperature: 0 });
        const answer = commitAnswer(out, c.options, hypothesisStatements(c));
        return { ...base, status: "completed", answer, usage: meter.snapshot(Date.now() - started), rationale: rationaleOf(out, answer), ...fullReply(c, out, answer) };
      } catch (err) {
        if (signal.aborted) throw err instanceof MedmmvError ? err : new MedmmvError("ABORTED", "eval cancelled", { cause: err });
        return { ...base, status: "failed", answer: null, usage: meter.snapshot(Date.now() - started), error: describeError(err), rationale: "" };
      }
    },
  };
}

/**
 * An open question's reply: the whole answer a person would read (reasoning and answer), not the
 * short answer alone — what HealthBench grades. Nothing for a multiple-choice question.
 */
export function fullReply(c: PreparedCase, out: CotOutput, answer: { text: string }): { reply?: string } {
  const open = !c.options || Object.keys(c.options).length === 0;
  return open ? { reply: `${out.reasoning.trim()}\n\n${answer.text}`.trim() } : {};
}

export function rationaleOf(out: CotOutput, answer: { option: string | null; text: string }): string {
  return `${out.reasoning.trim()}\nAnswer: ${answer.option ? `(${answer.option}) ` : ""}${answer.text}`;
}
