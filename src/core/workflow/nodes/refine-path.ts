import type { RunnableConfig } from "@langchain/core/runnables";
import { runHdSupervisor } from "../../agents/hd-supervisor.js";
import { runAutoRepair } from "../../agents/auto-repair.js";
import { runCoherenceJudge } from "../../agents/coherence-judge.js";
import type { PathOutput } from "../../contracts/reasoning-path.js";
import { EvidenceGraph, type SerializedEvidenceGraph } from "../../evidence/evidence-graph.js";
import { renderEvidenceForPrompt } from "../../evidence/render-for-prompt.js";
import { computeCu } from "../../scoring/cu.js";
import { describeError } from "../../contracts/errors.js";
import type { HdReport } from "../../contracts/diagnosis-result.js";
import { nodeCallContext, type WorkflowDeps } from "../run-context.js";
import { casePathway, withContextConflict } from "../../pathways/path-conflict.js";
import type { EvidencePrompt, PipelineStateUpdate, RefineTask } from "../state.js";
import { budgetReached } from "../case-budget.js";

/** The rendered evidence, or (a task from an older checkpoint) render it from the graph. */
function evidencePrompt(task: RefineTask): EvidencePrompt {
  // Tasks checkpointed before `evidence` existed carried the graph at the top level.
  // The cast stays: that older shape is not (and should not be) part of RefineTask's type.
  const e = task.evidence ?? { graph: (task as unknown as { graph: SerializedEvidenceGraph }).graph };
  if (!("graph" in e)) return e;
  const graph = EvidenceGraph.import(e.graph);
  return { text: renderEvidenceForPrompt(graph), activeNodeIds: graph.activeNodeIds() };
}

/**
 * Refinement of one distinct initial path (Send): the hd-supervisor fact-checks every
 * claim against the evidence graph; while it finds hallucinations and the repair budget
 * lasts, auto-repair revises the path. The final path is then judged for coherence and
 * scored (CU). Any failure is recorded on this path only.
 */
export function refinePathNode(deps: WorkflowDeps) {
  return async (task: RefineTask, config: RunnableConfig): Promise<PipelineStateUpdate> => {
    const started = Date.now();
    const c = deps.images.hydrate(task.caseInput);
    const opts = task.options;
    const ctx = nodeCallContext(deps, config, c.id, task.startDepth, { countSpending: true });
    // Before each repair: what the case spent before refinement, plus all its refine branches so far.
    const overBudget = () => {
      const live = deps.spending.get(c.id);
      const before = task.spentBefore ?? { tokens: 0, costUsd: 0 };
      return budgetReached(opts.budget, { tokens: before.tokens + live.tokens, costUsd: before.costUsd + live.costUsd });
    };
    let budgetExhausted = false;
    const emit = deps.hooks.emitter(config);
    const { text: evidenceText, activeNodeIds } = evidencePrompt(task);
    const active = new Set(activeNodeIds);
    const knownNodeIds = (id: string) => active.has(id);
    const pathId = task.planned.pathId;
    const pathway = casePathway(c.pathway);
    const hdReports: HdReport[] = [];
    let path: PathOutput = task.planned.path;
    let repairs = 0;
    try {
      if (!opts.ablations.noHd) {
        for (let attempt = 1; ; attempt++) {
          const checked = await runHdSupervisor(deps.agents, ctx, c, { path, evidenceText, knownNodeIds, attempt });
          // A path that leaves the case's pathway is a hallucination too (deterministic, no model call).
          const report = pathway ? withContextConflict(checked, pathway, path) : checked;
          hdReports.push({ ...report, path: toResultPath(pathId, path, report) });
          emit("hd-verdict", {
            pathId,
            attempt,
            hallucinationDetected: report.hallucinationDetected,
            severity: report.severity,
            verdicts: countVerdicts(report),
          });
          if (!report.hallucinationDetected || repairs >= opts.maxRepairs) break;
          if (overBudget()) {
            budgetExhausted = true;
            break;
          }
          path = await runAutoRepair(deps.agents, ctx, c, { path, report, evidenceText });
          repairs++;
          emit("repair", { pathId, repair: repairs, answer: path.answer.option ?? path.answer.text.slice(0, 80) });
        }
      }
      const coherence = await runCoherenceJudge(deps.agents, ctx, c, path);
      const last = hdReports.at(-1);
      const totalClaims = path.steps.reduce((n, s) => n + s.claims.length, 0);
      const supported = last ? last.claims.filter((x) => x.verdict === "supported").length : 0;
      const scores = computeCu({ supported, totalClaims, coherence: coherence.coherence, repairs, maxRepairs: opts.maxRepairs }, opts.weights);
      const evidenceIds = [...new Set(last ? last.claims.filter((x) => x.verdict === "supported").flatMap((x) => x.evidence) : [])];
      emit("path-scored", { pathId, ...scores, repairs });
      return {
        refined: [
          {
            pathId,
            multiplicity: task.multiplicity,
            initial: task.planned.path,
            final: path,
            repairs,
            hdReports,
            coherence: coherence.coherence,
            scores,
            evidenceIds,
            usage: ctx.meter.snapshot(Date.now() - started),
            depth: ctx.chain.depth,
            ...(budgetExhausted ? { budgetExhausted: true as const } : {}),
          },
        ],
      };
    } catch (err) {
      const error = describeError(err);
      emit("branch-failed", { branch: pathId, ...error });
      return {
        refined: [
          { pathId, multiplicity: task.multiplicity, initial: task.planned.path, final: null, repairs, hdReports, coherence: null, scores: null, evidenceIds: [], error, usage: ctx.meter.snapshot(Date.now() - started), depth: ctx.chain.depth },
        ],
      };
    }
  };
}

function countVerdicts(r: HdReport): Record<string, number> {
  const out: Record<string, number> = { supported: 0, contradicted: 0, unsupported: 0 };
  for (const x of r.claims) out[x.verdict] = (out[x.verdict] ?? 0) + 1;
  return out;
}

/** The path as the contract shows it, with each claim's verdict and evidence from a report. */
export function toResultPath(pathId: string, p: PathOutput, report: HdReport | undefined) {
  let i = 0;
  return {
    id: pathId,
    summary: p.summary,
    steps: p.steps.map((s) => ({
      text: s.text,
      stage: s.stage,
      claims: s.claims.map((text) => {
        const v = report?.claims[i++];
        return { text, verdict: v?.verdict, evidence: v?.evidence ?? [] };
      }),
    })),
  };
}
