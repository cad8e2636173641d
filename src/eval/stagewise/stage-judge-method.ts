import type { AgentDeps } from "../../core/agents/agent-context.js";
import type { PreparedCase } from "../../core/contracts/clinical-case.js";
import type { Prices } from "../../core/config.js";
import { MedmmvError } from "../../core/contracts/errors.js";
import { addUsage, CallChain, UsageMeter } from "../../core/llm/usage.js";
import type { ResultRecord } from "../results-file.js";
import type { EvalMethod, MethodOutput, MethodRunContext } from "../methods/types.js";
import { judgeAnswer, judgeStages } from "./judging.js";
import { renderTrace } from "./trace-parser.js";
import { STAGES, type JudgedTrace, type StageTrace, type StagewiseRecord } from "./types.js";

/** A method's final path as a stage trace: its steps grouped by their stage tag, in order. */
export function pathTrace(steps: NonNullable<MethodOutput["steps"]>, answer: MethodOutput["answer"]): JudgedTrace {
  const stages: StageTrace = { visual: "", knowledge: "", reasoning: "", answer: answer ? (answer.option ? `${answer.option}. ${answer.text}` : answer.text) : "" };
  for (const s of STAGES) stages[s] = steps.filter((x) => x.stage === s).map((x) => x.text.trim()).join(" ");
  // Not held to ClinHallu's trace rules: the method answered in its own format, and a path
  // without a visual step (a text-only case) is still an answer.
  return { stages, raw: renderTrace(stages), valid: answer !== null, validation: answer ? "path" : "no answer", attempts: 0, answerCorrect: null, answerReason: "" };
}

function fromRecord(r: ResultRecord): MethodOutput {
  const out: MethodOutput = {
    status: r.stagewise?.methodStatus ?? "completed",
    answer: r.answer,
    usage: r.usage,
    cu: r.cu,
    answerSupport: r.answerSupport,
    stability: r.stability,
    hallucinations: r.hallucinations,
    errors: r.errors,
    steps: r.steps ?? [],
    rationale: "",
  };
  if (r.abstentionReason) out.abstentionReason = r.abstentionReason;
  return out;
}

/**
 * `--stage-judge`: run a method (MedMMV, or CoT asked for stage-tagged steps), then judge its
 * final path on ClinHallu's scale — the steps grouped by stage, each group judged against
 * the item's reference stage where one exists, else against the case alone; MedMMV's
 * knowledge and reasoning judges also see the evidence graph its path rests on. A stage the
 * path has no step for is not judged (a text-only case has no visual step), so the rates
 * count paths that have that stage. The method's output is checkpointed first: judging
 * resumes without running the method again.
 */
export function stageJudgeMethod(inner: EvalMethod, deps: AgentDeps, prices: Prices, opts: { letterShortcut?: boolean } = {}): EvalMethod {
  return {
    name: inner.name,
    prompts: [...inner.prompts, "answer-judge", "stage-judge"],
    async run(c: PreparedCase, signal: AbortSignal, rc?: MethodRunContext): Promise<MethodOutput> {
      if (!rc) throw new MedmmvError("INTERNAL", "--stage-judge needs the runner's item context");
      const started = Date.now();
      const prev = rc.previous?.stagewise?.format === "path" && rc.previous.steps ? rc.previous : undefined;
      let out: MethodOutput;
      let state: StagewiseRecord;
      if (prev) {
        out = fromRecord(prev);
        state = structuredClone(prev.stagewise!);
      } else {
        out = await inner.run(c, signal);
        if (out.status === "failed") return out;
        state = { format: "path", hasReference: (rc.item.stagewise?.reference ?? null) !== null, trace: pathTrace(out.steps ?? [], out.answer), judged: {}, replacements: {}, methodStatus: out.status };
        if (out.evidence) state.evidence = out.evidence;
        out = { ...out, stagewise: state };
        delete out.evidence;
        await rc.checkpoint(out);
      }
      const meter = new UsageMeter(prices);
      const ctx = { caseKey: c.id, meter, chain: new CallChain(meter), signal };
      const trace = state.trace!;
      const present = STAGES.filter((s) => trace.stages[s] !== "");
      // Both record a judge failure themselves and throw only ABORTED, when the signal aborts.
      await Promise.all([
        judgeAnswer(deps, ctx, c, rc.item.gold, trace, opts),
        judgeStages(deps, ctx, c, { gold: rc.item.gold, reference: rc.item.stagewise?.reference ?? null, candidate: trace.stages, stages: present, judged: state.judged, evidence: state.evidence }),
      ]);
      delete state.evidence;
      const final: MethodOutput = { ...out, stagewise: state, usage: addUsage(out.usage, meter.snapshot(Date.now() - started)) };
      delete final.steps;
      return final;
    },
  };
}
