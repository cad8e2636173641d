import type { AgentDeps } from "../../core/agents/agent-context.js";
import type { PreparedCase } from "../../core/contracts/clinical-case.js";
import type { Prices } from "../../core/config.js";
import { addUsage, CallChain, UsageMeter } from "../../core/llm/usage.js";
import { clusterAnswers } from "../../core/workflow/answer-clustering.js";
import { isCorrect } from "../answer-match.js";
import type { EvalMethod, MethodOutput, MethodRunContext } from "../methods/types.js";
import type { OpenMatchRecord } from "./types.js";

/**
 * `--open`: an open answer is graded by meaning against the gold text — the answer-cluster
 * rules first (case, punctuation, articles, listed abbreviations: no call), then one
 * equivalence-judge call (judge role, the contract of docs/architecture.md#scores) with the
 * answer and the gold as answers 1 and 2. The verdict is kept on the record beside exact
 * match; a judge that fails leaves the item graded by exact match, and says so.
 */
export function openMatchedMethod(inner: EvalMethod, deps: AgentDeps, prices: Prices): EvalMethod {
  return {
    name: inner.name,
    prompts: [...inner.prompts, "equivalence-judge"],
    async run(c: PreparedCase, signal: AbortSignal, rc?: MethodRunContext): Promise<MethodOutput> {
      const out = await inner.run(c, signal, rc);
      const gold = rc?.item.gold;
      if (!gold || gold.kind !== "open" || out.status !== "completed" || !out.answer?.text.trim() || out.correct !== undefined) return out;
      const started = Date.now();
      const meter = new UsageMeter(prices);
      const ctx = { caseKey: c.id, meter, chain: new CallChain(meter), signal };
      const exact = isCorrect(out.answer, gold);
      const { clusters, judge } = await clusterAnswers(deps, ctx, c, [{ option: null, text: out.answer.text }, { option: null, text: gold.text }]);
      const same = clusters.length === 1;
      const openMatch: OpenMatchRecord =
        judge.status === "not-needed"
          ? { verdict: same ? "rules" : "different", exact }
          : judge.status === "answered"
            ? { verdict: same ? "judge-same" : "different", exact, ...(judge.rationale ? { rationale: judge.rationale } : {}) }
            : { verdict: "judge-failed", exact, ...(judge.note ? { note: judge.note } : {}) };
      return {
        ...out,
        correct: openMatch.verdict === "judge-failed" ? exact : same,
        openMatch,
        usage: addUsage(out.usage, meter.snapshot(Date.now() - started)),
      };
    },
  };
}
