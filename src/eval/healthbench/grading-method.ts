import type { AgentDeps } from "../../core/agents/agent-context.js";
import type { PreparedCase } from "../../core/contracts/clinical-case.js";
import type { Prices } from "../../core/config.js";
import { describeError, MedmmvError } from "../../core/contracts/errors.js";
import { addUsage, CallChain, UsageMeter } from "../../core/llm/usage.js";
import { runRubricGrader } from "../agents/rubric-grader.js";
import type { EvalMethod, MethodOutput, MethodRunContext } from "../methods/types.js";
import { scoreExample } from "./scoring.js";
import type { CriterionGrade } from "./types.js";

/**
 * `--dataset healthbench`: the method answers the last user turn (the earlier turns are the
 * case's notes), then the rubric grader (judge role) decides every criterion of the item's
 * rubric for that reply, and the reply is scored as HealthBench scores it. The grader's calls
 * are part of the item's usage, so its cost is in the record's cost. A criterion the grader
 * could not decide (its reply never validated) fails the item, with what it cost: a partial
 * rubric would change the score's denominator.
 */
export function rubricGradedMethod(inner: EvalMethod, deps: AgentDeps, prices: Prices): EvalMethod {
  return {
    name: inner.name,
    prompts: [...inner.prompts, "rubric-grader"],
    async run(c: PreparedCase, signal: AbortSignal, rc?: MethodRunContext): Promise<MethodOutput> {
      const hb = rc?.item.healthbench;
      if (!hb) throw new MedmmvError("INTERNAL", "a HealthBench item needs its rubric in the runner's item context");
      const out = await inner.run(c, signal, rc);
      if (out.status === "failed" || !(out.reply ?? out.answer?.text ?? "").trim()) return out;
      const started = Date.now();
      const meter = new UsageMeter(prices);
      const ctx = { caseKey: c.id, meter, chain: new CallChain(meter), signal };
      // What a person would read: MedMMV's composed reply (only verified claims in it), CoT's full answer.
      const reply = out.reply ?? out.answer?.text ?? "";
      let grades: CriterionGrade[];
      try {
        grades = await Promise.all(
          hb.rubrics.map(async (item) => {
            const v = await runRubricGrader(deps, ctx, c, { reply, criterion: item.criterion, points: item.points });
            return { ...item, met: v.met, explanation: v.explanation };
          }),
        );
      } catch (err) {
        if (signal.aborted) throw err instanceof MedmmvError ? err : new MedmmvError("ABORTED", "eval cancelled", { cause: err });
        const e = describeError(err);
        return { ...out, status: "failed", usage: addUsage(out.usage, meter.snapshot(Date.now() - started)), error: { code: e.code, message: `rubric grading failed: ${e.message}` } };
      }
      return {
        ...out,
        usage: addUsage(out.usage, meter.snapshot(Date.now() - started)),
        healthbench: { promptId: hb.promptId, exampleTags: hb.exampleTags, grades, ...scoreExample(grades) },
      };
    },
  };
}
