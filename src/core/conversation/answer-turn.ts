import type { PreparedCase } from "../contracts/clinical-case.js";
import type { CallContext } from "../llm/model-client.js";
import type { AgentDeps } from "../agents/agent-context.js";
import { runTurnAnswer } from "../agents/turn-answer.js";
import { runHdSupervisor } from "../agents/hd-supervisor.js";
import { runPathwayJudge } from "../agents/pathway-judge.js";
import type { PathOutput } from "../contracts/reasoning-path.js";
import { EvidenceGraph, type SerializedEvidenceGraph } from "../evidence/evidence-graph.js";
import { renderEvidenceForPrompt } from "../evidence/render-for-prompt.js";
import { MedmmvError } from "../contracts/errors.js";
import { labelAnswer } from "../pathways/labeller.js";
import { answerSequenceIssue, checkAnswerSequence } from "../pathways/consistency.js";
import { NO_MATCH, type Pathway } from "../contracts/pathway.js";
import type { NewTurn } from "../contracts/conversation-turn.js";

/** An earlier turn, as far as answering the next one needs it. */
export interface PriorTurn {
  turn: number;
  question: string;
  answer: string;
  step: string | null;
  category: string | null;
}

export interface TurnRequest {
  question: string;
  /** The pathway step the question is about; without it the model says which. */
  step?: string;
}

/** The evidence graph as the turn prompts show it: rendered once per conversation. */
export interface TurnEvidence {
  text: string;
  graph: EvidenceGraph;
}

export function turnEvidence(serialized: SerializedEvidenceGraph | Record<string, unknown> | null): TurnEvidence {
  const graph = serialized ? EvidenceGraph.import(serialized) : new EvidenceGraph();
  return { text: renderEvidenceForPrompt(graph), graph };
}

/** Checks a requested step before any model call, so a wrong one is a 400 naming the choices. */
export function checkRequestedStep(pathway: Pathway | undefined, step: string | undefined): void {
  if (step === undefined) return;
  if (!pathway) throw new MedmmvError("INVALID_INPUT", "`step` was given but this case has no pathway; leave it out or submit the case with `pathway`");
  if (!pathway.steps.some((s) => s.id === step))
    throw new MedmmvError("INVALID_INPUT", `step "${step.slice(0, 80)}" is not a step of pathway "${pathway.id}" (steps: ${pathway.steps.map((s) => s.id).join(", ")})`);
}

/**
 * One conversation turn on a finished case (docs/architecture.md#clinical-pathways-and-conversations): a short rollout answers the
 * question from the case's evidence graph and the earlier turns, the hd-supervisor checks
 * its claims against the graph, the labeller maps the answer onto the pathway step, and
 * the labelled sequence of all turns so far is tested against the valid paths. Without an
 * evidence graph (`evidence: null`, the eval's cot baseline) the model answers from the case
 * and the history alone, and nothing is fact-checked.
 */
export async function answerTurn(
  deps: AgentDeps,
  ctx: CallContext,
  input: { case: PreparedCase; pathway?: Pathway; evidence: TurnEvidence | null; history: PriorTurn[]; request: TurnRequest },
): Promise<NewTurn> {
  const { pathway, request } = input;
  checkRequestedStep(pathway, request.step);
  const out = await runTurnAnswer(deps, ctx, input.case, {
    question: request.question,
    history: input.history,
    ...(pathway ? { pathway } : {}),
    ...(request.step ? { step: request.step } : {}),
    ...(input.evidence ? { evidenceText: input.evidence.text } : {}),
  });
  const path: PathOutput = { steps: [{ text: out.answer, stage: "reasoning", claims: out.claims }], answer: { option: null, text: out.answer }, summary: out.answer };
  const evidence = input.evidence;
  const active = new Set(evidence?.graph.activeNodeIds() ?? []);
  const hd = evidence ? await runHdSupervisor(deps, ctx, input.case, { path, evidenceText: evidence.text, knownNodeIds: (id) => active.has(id), attempt: 1 }) : null;

  // The model's choice of step counts only when it names a real step; the client's wins.
  const stepId = request.step ?? (pathway?.steps.some((s) => s.id === out.step) ? out.step : null);
  const step = stepId ? pathway!.steps.find((s) => s.id === stepId)! : undefined;
  let category: string | null = null;
  let labelledBy: "keywords" | "judge" | null = null;
  let keyword: string | undefined;
  let ties: string[] | undefined;
  if (step) {
    const label = labelAnswer(out.answer, step);
    category = label.category;
    labelledBy = "keywords";
    keyword = label.hit?.keyword;
    ties = label.ties;
    if (category === NO_MATCH && step.judgeFallback) {
      category = await runPathwayJudge(deps, ctx, input.case, { step, answer: out.answer });
      labelledBy = "judge";
    }
  }

  const answers = [...input.history, { step: stepId, category }];
  const check = pathway ? checkAnswerSequence(pathway, answers) : null;
  const evidenceIds = [...new Set((hd?.claims ?? []).filter((x) => x.verdict === "supported").flatMap((x) => x.evidence))];
  return {
    turn: (input.history.at(-1)?.turn ?? 0) + 1,
    question: request.question,
    answer: out.answer,
    step: stepId,
    category,
    contextConflict: check ? !check.consistent : false,
    evidence: evidenceIds.map((id) => ({ id, label: evidence?.graph.getNode(id)?.label ?? id })),
    details: {
      ...(hd
        ? {
            claims: hd.claims.map((x) => ({ claim: x.claim, verdict: x.verdict, evidence: x.evidence, stage: x.stage })),
            hallucinationDetected: hd.hallucinationDetected,
            severity: hd.severity,
            issues: hd.issues,
          }
        : { claims: out.claims.map((claim) => ({ claim })) }),
      ...(labelledBy ? { labelledBy } : {}),
      ...(keyword ? { keyword } : {}),
      ...(ties ? { ties } : {}),
      ...(check && !check.consistent
        ? { conflict: { pathway: pathway!.id, steps: check.conflictingSteps, contradicted: check.contradicted, labels: check.sequence, issue: answerSequenceIssue(pathway!, answers, check) } }
        : {}),
    },
  };
}
