import { runCot } from "../agents/cot.js";
import type { AgentDeps } from "../../core/agents/agent-context.js";
import type { PreparedCase } from "../../core/contracts/clinical-case.js";
import type { Prices } from "../../core/config.js";
import { describeError, MedmmvError } from "../../core/contracts/errors.js";
import { CallChain, UsageMeter } from "../../core/llm/usage.js";
import { stabilityReport } from "../../core/scoring/stability.js";
import { normalizeYesNo } from "../answer-match.js";
import { expandedWording } from "../../core/scoring/answer-clusters.js";
import { hypothesisStatements } from "../probes/hypothesis.js";
import { commitAnswer, fullReply, rationaleOf } from "./cot.js";
import { NO_HALLUCINATIONS, type EvalMethod, type MethodOutput } from "./types.js";

/**
 * What two samples must share to count as the same vote: the letter, or the open answer as the
 * answer-cluster rules read it (case, punctuation, articles, listed abbreviations written out:
 * "Inferior MI" and "inferior myocardial infarction" are one vote). No model call: the
 * baseline's votes are not judged by meaning as MedMMV's rollouts are.
 */
export function voteKey(answer: { option: string | null; text: string }): string | null {
  if (answer.option) return answer.option;
  const t = normalizeYesNo(answer.text) ?? expandedWording(answer.text);
  return t === "" ? null : t;
}

/** The most frequent key; ties go to the key whose first vote came earliest (deterministic). */
export function majority(keys: readonly (string | null)[]): string | null {
  const counts = new Map<string, { n: number; first: number }>();
  keys.forEach((k, i) => {
    if (k === null) return;
    const c = counts.get(k);
    if (c) c.n++;
    else counts.set(k, { n: 1, first: i });
  });
  let best: string | null = null;
  let bestN = 0;
  let bestFirst = Infinity;
  for (const [k, c] of counts) {
    if (c.n > bestN || (c.n === bestN && c.first < bestFirst)) {
      best = k;
      bestN = c.n;
      bestFirst = c.first;
    }
  }
  return best;
}

/**
 * Self-consistency: k CoT samples at the rollout temperature, in parallel, majority vote.
 * Same prompt as the CoT baseline. `deps.llm` should have no response cache: identical
 * prompts would otherwise all return the first sample.
 */
export function selfConsistencyMethod(deps: AgentDeps, prices: Prices, opts: { k: number; temperature: number }): EvalMethod {
  return {
    name: "self-consistency",
    prompts: ["system", "cot"],
    async run(c: PreparedCase, signal: AbortSignal): Promise<MethodOutput> {
      const started = Date.now();
      const meter = new UsageMeter(prices);
      const root = new CallChain(meter);
      const samples = await Promise.all(
        Array.from({ length: opts.k }, async (_, i) => {
          try {
            const out = await runCot(deps, { caseKey: c.id, meter, chain: root.fork(), signal }, c, { temperature: opts.temperature });
            return { ok: true as const, out, answer: commitAnswer(out, c.options, hypothesisStatements(c)) };
          } catch (err) {
            if (signal.aborted) throw err instanceof MedmmvError ? err : new MedmmvError("ABORTED", "eval cancelled", { cause: err });
            return { ok: false as const, error: { branch: `sample-${i}`, ...describeError(err) } };
          }
        }),
      );
      const ok = samples.flatMap((s) => (s.ok ? [s] : []));
      const errors = samples.flatMap((s) => (s.ok ? [] : [s.error]));
      const keys = samples.map((s) => (s.ok ? voteKey(s.answer) : null));
      const winner = majority(keys);
      const chosen = ok.find((s) => voteKey(s.answer) === winner) ?? null;
      const stability = stabilityReport(keys);
      const base = {
        usage: meter.snapshot(Date.now() - started),
        cu: null,
        stability: { answers: keys, rgm: stability.rgm, entropy: stability.entropy },
        hallucinations: { ...NO_HALLUCINATIONS },
        errors,
      };
      if (!chosen) {
        const first = errors[0];
        return {
          ...base,
          status: "failed",
          answer: null,
          answerSupport: null,
          error: { code: first?.code ?? "PIPELINE_FAILED", message: `all ${opts.k} samples failed${first ? ` (first: ${first.message})` : ""}` },
          rationale: "",
        };
      }
      return {
        ...base,
        status: "completed",
        answer: chosen.answer,
        // Share of the successful samples that voted for the answer.
        answerSupport: keys.filter((k) => k === winner).length / ok.length,
        rationale: rationaleOf(chosen.out, chosen.answer),
        // An open question's reply is the chosen sample's whole answer, as CoT's (HealthBench grades it).
        ...fullReply(c, chosen.out, chosen.answer),
      };
    },
  };
}
