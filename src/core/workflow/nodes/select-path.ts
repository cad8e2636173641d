import type { RunnableConfig } from "@langchain/core/runnables";
import { DISCLAIMER, DiagnosisResult, type BranchFailure, type Candidate, type Hallucination } from "../../contracts/diagnosis-result.js";
import { EvidenceGraph } from "../../evidence/evidence-graph.js";
import { answerSupport, selectBest } from "../../scoring/cu.js";
import { clusteredStabilityReport } from "../../scoring/stability.js";
import { rankDifferential } from "../../scoring/differential.js";
import { codeDifferential, type TerminologyNote } from "../../terminology/code-differential.js";
import type { AnswerClusterRecord } from "../answer-clustering.js";
import { UsageMeter } from "../../llm/usage.js";
import type { WorkflowDeps } from "../run-context.js";
import type { PipelineOptions, PipelineStateUpdate, PipelineStateValue, RefinedPath, RolloutRecord } from "../state.js";
import { answerKey, answersByIndex, clusterIndexOf } from "./plan-refinement.js";
import { clusterRecord } from "./cluster-answers.js";
import { toResultPath } from "./refine-path.js";
import { scanForInjection } from "../../agents/untrusted-content.js";
import { fhirIgnoredResources } from "../../contracts/fhir-origin.js";
import { renderPathForPrompt } from "../../agents/path-rendering.js";
import { describeLabels } from "../../pathways/consistency.js";
import { decideOutcome } from "../abstention.js";
import { imageInputNote, withImageNotes } from "../image-input.js";

/** Agents whose prompt versions go into provenance. */
const PROMPTS_USED = ["system", "rollout", "text-doctor", "image-doctor", "image-hd", "image-revise", "web-search-query", "web-search-analysis", "hd-supervisor", "auto-repair", "coherence-judge", "equivalence-judge"];

/** Deterministic PRNG for --select random (reproducible ablations). */
function seeded(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function pickIndex(refined: RefinedPath[], mode: "cu" | "random" | "majority", seed: number, clusterOf: (p: RefinedPath["final"]) => string | null): number | null {
  const live = refined.map((r, i) => ({ r, i })).filter((x) => x.r.scores !== null);
  if (live.length === 0) return null;
  if (mode === "random") return live[Math.floor(seeded(seed)() * live.length)]!.i;
  if (mode === "majority") {
    const votes = new Map<string, number>();
    for (const { r } of live) {
      const a = clusterOf(r.final) ?? "";
      votes.set(a, (votes.get(a) ?? 0) + r.multiplicity);
    }
    const top = Math.max(...votes.values());
    const winners = live.filter((x) => votes.get(clusterOf(x.r.final) ?? "") === top);
    winners.sort((a, b) => b.r.scores!.cu - a.r.scores!.cu || a.i - b.i);
    return winners[0]!.i;
  }
  // Tie-break by answer frequency (answer clusters) counts each path with its multiplicity (identical rollouts refined once).
  const expanded = live.flatMap(({ r, i }) => Array.from({ length: r.multiplicity }, () => ({ index: i, answer: clusterOf(r.final), cu: r.scores!.cu })));
  return selectBest(expanded);
}

/** Final step: choose the path (CU argmax by default) and assemble the DiagnosisResult. */
export function selectPathNode(deps: WorkflowDeps) {
  return async (state: PipelineStateValue, config: RunnableConfig): Promise<PipelineStateUpdate> => {
    const c = state.caseInput;
    const opts = state.options;
    const refined = [...state.refined].sort((a, b) => Number(a.pathId.slice(5)) - Number(b.pathId.slice(5)));
    // Second-round rollouts an agreeing adaptive first round made unnecessary were never sampled.
    const rollouts = state.rollouts.filter((r) => !r.skipped).sort((a, b) => a.index - b.index);
    const evidence = state.evidence;
    const failures: BranchFailure[] = [];
    for (const r of rollouts) if (r.error) failures.push({ branch: `rollout-${r.index}`, ...r.error });
    for (const f of evidence?.failures ?? []) failures.push(f);
    for (const r of refined) if (r.error) failures.push({ branch: r.pathId, ...r.error });
    // LangGraph has dropped Send tasks silently in some configurations (#2656): check results equal sends.
    if (refined.length !== state.plan.length)
      failures.push({ branch: "refine", code: "INTERNAL", message: `${state.plan.length} paths planned but ${refined.length} refined` });

    // Clustered beside refinement (nodes/cluster-answers.ts); here only when nothing was refined.
    const clustering =
      currentClusters(state.answerClusters, rollouts) ??
      (await clusterRecord(deps, config, { caseInput: c, answers: answersByIndex(rollouts), covers: rollouts.map((r) => r.index), startDepth: Math.max(evidence?.depth ?? 0, ...rollouts.map((r) => r.depth)) }));
    const meter = new UsageMeter(deps.prices);
    for (const u of [...rollouts.map((r) => r.usage), ...(evidence ? [evidence.usage] : []), ...refined.map((r) => r.usage), ...(clustering.usage ? [clustering.usage] : [])]) meter.absorb(u);
    const index = clusterIndexOf(clustering, rollouts);
    const clusterOf = (p: RefinedPath["final"]) => index.keyOf(p?.answer ?? null);
    const chosen = pickIndex(refined, opts.select, opts.seed, clusterOf);
    const sel = chosen === null ? null : refined[chosen]!;
    const finalAnswer = sel?.final?.answer ?? null;

    const scored = refined.flatMap((r, i) => (r.scores ? [{ index: i, answer: clusterOf(r.final), cu: r.scores.cu, weight: r.multiplicity }] : []));
    const expanded = scored.flatMap((s) => Array.from({ length: s.weight }, () => s));
    const support = sel ? answerSupport(expanded, clusterOf(sel.final)) : null;

    const llm = deps.agents.llm;
    const rolloutModel = new Map(rollouts.map((r) => [r.index, r.model ?? llm.rolloutModel(r.index)]));
    const planned = new Map(state.plan.map((p) => [p.pathId, p.rolloutIndices]));
    const candidates: Candidate[] = refined.map((r, i) => ({
      pathId: r.pathId,
      initialAnswer: answerKey(r.initial),
      finalAnswer: answerKey(r.final),
      repairs: r.repairs,
      multiplicity: r.multiplicity,
      cluster: clusterOf(r.final ?? r.initial),
      scores: r.scores,
      selected: i === chosen,
      hdReports: r.hdReports,
      ...(r.error ? { error: r.error } : {}),
      models: {
        rollouts: (planned.get(r.pathId) ?? []).map((index) => rolloutModel.get(index) ?? llm.rolloutModel(index)),
        verdicts: r.hdReports.length ? llm.modelFor("judge") : null,
        repairs: r.repairs > 0 ? llm.modelFor("executor") : null,
      },
    }));

    const hallucinations: Hallucination[] = [];
    for (const r of refined) {
      const last = r.hdReports.at(-1);
      r.hdReports.forEach((rep) => {
        if (!rep.hallucinationDetected) return;
        const resolved = rep !== last && !!last && !last.hallucinationDetected;
        for (const cl of rep.claims) {
          if (cl.verdict === "supported") continue;
          hallucinations.push({ pathId: r.pathId, attempt: rep.attempt, stage: cl.stage, severity: rep.severity, claim: cl.claim, issue: rep.issues[0] ?? `claim ${cl.verdict}`, resolved });
        }
        const cc = rep.contextConflict;
        if (cc) hallucinations.push({ pathId: r.pathId, attempt: rep.attempt, stage: "reasoning", severity: "HIGH", claim: describeLabels(cc.labels, cc.steps), issue: cc.issue, resolved });
      });
    }

    const untrusted = [...(evidence?.untrusted ?? [])];
    const caseHit = scanForInjection([c.notes, c.question, ...Object.values(c.options ?? {}), ...c.images.map((i) => i.caption ?? "")].join("\n"));
    if (caseHit) untrusted.push({ source: "case", note: `case text ${caseHit}; treated as data` });
    for (const r of rollouts) {
      const hit = r.path && scanForInjection(renderPathForPrompt(r.path));
      if (hit) untrusted.push({ source: `model:rollout-${r.index}`, note: `model output ${hit}; treated as data` });
    }
    for (const r of refined) {
      const hit = r.final && r.repairs > 0 && scanForInjection(renderPathForPrompt(r.final));
      if (hit) untrusted.push({ source: `model:auto-repair ${r.pathId}`, note: `model output ${hit}; treated as data` });
    }

    const full = evidence ? EvidenceGraph.import(evidence.graph) : new EvidenceGraph();
    const finishedAt = new Date().toISOString();
    const { status, abstentionReason, error } = decideOutcome({ selected: sel, refined, rollouts, options: c.options });
    let differential =
      status === "failed" || !finalAnswer
        ? []
        : rankDifferential(
            clustering.clusters,
            candidates.map((cand, i) => ({ cluster: cand.cluster ?? null, cu: cand.scores?.cu ?? null, answer: refined[i]!.final?.answer ?? null })),
            clusterOf(sel!.final),
            (letter) => c.options?.[letter] ?? letter,
          );
    // Codes only from the configured terminology server, never from a model (MEDMMV_TERMINOLOGY_URL).
    let terminology: TerminologyNote | undefined;
    if (deps.terminology && differential.length) ({ differential, note: terminology } = await codeDifferential(deps.terminology, differential, config.signal));


    const imageInput = imageInputNote(llm, c.images.length, rollouts.map((r) => rolloutModel.get(r.index)!), opts);
    const result: DiagnosisResult = {
      caseId: c.id,
      status,
      answer: status === "failed" || !finalAnswer ? null : { option: finalAnswer.option, text: finalAnswer.text },
      answerSupport: status === "failed" ? null : support,
      abstentionReason,
      path: sel?.final ? toResultPath(sel.pathId, sel.final, sel.hdReports.at(-1)) : null,
      evidenceGraph: sel ? (full.supportingSubgraph(sel.evidenceIds).export()) : null,
      candidates,
      stability: clusteredStabilityReport(
        rollouts.map((r) => answerKey(r.path)),
        rollouts.map((r) => index.keyOf(r.path?.answer ?? null)),
        clustering.clusters.map((cl) => ({ key: cl.key, canonical: cl.canonical, rollouts: cl.rollouts, rule: cl.rule, wordings: cl.wordings })),
      ),
      differential,
      hallucinations,
      usage: meter.snapshot(Date.parse(finishedAt) - Date.parse(state.startedAt)),
      provenance: {
        models: llm.models(),
        rolloutModels: rollouts.map((r) => rolloutModel.get(r.index)!),
        prompts: deps.prompts.hashes(PROMPTS_USED),
        config: {
          k: opts.k,
          maxRepairs: opts.maxRepairs,
          weights: opts.weights,
          rolloutTemperature: opts.rolloutTemperature,
          maxSearchPairs: opts.maxSearchPairs,
          adaptive: opts.adaptive,
          dedupe: opts.dedupe,
          select: opts.select,
          ablations: opts.ablations,
          rolloutsSampled: rollouts.length,
          ...(opts.composeReply ? { composeReply: true } : {}),
          ...modelBehaviourNote(withImageNotes(deps.agents.llm.modelBehaviour(), imageInput)),
          // What each model was costed at, from where and when, or "unpriced" (model-client.ts priceSources).
          prices: deps.agents.llm.priceSources([...Object.values(llm.models()), ...rollouts.map((r) => rolloutModel.get(r.index)!)]),
          ...(opts.budget && (opts.budget.maxTokens !== null || opts.budget.maxCostUsd !== null) ? { budget: opts.budget } : {}),
          ...(c.pathway ? { pathway: typeof c.pathway === "string" ? c.pathway : c.pathway.id } : {}),
        },
        search: evidence ? { provider: evidence.search.provider, enabled: evidence.search.enabled, ...(evidence.search.note ? { note: evidence.search.note } : {}) } : undefined,
        failures,
        ...(imageInput ? { imageInput } : {}),
        ...fhirIgnoredResources(c),
        untrustedContent: untrusted,
        answerClusters: clusteringNote(clustering),
        ...(terminology ? { terminology } : {}),
        ...(evidence
          ? { evidenceChecks: { textDoctor: evidence.textDoctor, imageDoctor: evidence.imageChecks, webSearch: { pairsPlanned: evidence.search.pairsPlanned, pairsSearched: evidence.search.pairsSearched } } }
          : {}),
        startedAt: state.startedAt,
        finishedAt,
        version: deps.version,
      },
      ...(error ? { error } : {}),
      ...budgetNote(opts, refined),
      disclaimer: DISCLAIMER,
    };
    return { result: DiagnosisResult.parse(result) };
  };
}

/** The clusters in the state when they cover exactly the rollouts that ran (not a stale record of an earlier round). */
function currentClusters(record: AnswerClusterRecord | null, rollouts: readonly RolloutRecord[]): AnswerClusterRecord | null {
  if (!record) return null;
  const ran = rollouts.map((r) => r.index);
  return record.covers.length === ran.length && record.covers.every((i, at) => i === ran[at]) ? record : null;
}

/** provenance.answerClusters: what the judge did and which wordings were merged by which rule. */
function clusteringNote(record: AnswerClusterRecord): NonNullable<DiagnosisResult["provenance"]["answerClusters"]> {
  const j = record.judge;
  return {
    judge: j.status,
    asked: j.asked,
    ...(j.rationale ? { rationale: j.rationale } : {}),
    ...(j.note ? { note: j.note } : {}),
    merged: record.clusters.filter((cl) => cl.wordings.length > 1).map((cl) => ({ rule: cl.rule, wordings: cl.wordings })),
  };
}

/** What the models' profiles and servers changed about what was sent (no temperature, another structured-output mode, composed images). */
function modelBehaviourNote(behaviour: Record<string, Record<string, unknown>>): { modelBehaviour?: Record<string, Record<string, unknown>> } {
  return Object.keys(behaviour).length ? { modelBehaviour: behaviour } : {};
}

/** Where the case's budget cut repairs short: the budget and the paths whose remaining repairs were skipped. */
function budgetNote(opts: PipelineOptions, refined: RefinedPath[]): Pick<DiagnosisResult, "budgetExhausted"> {
  const cut = refined.filter((r) => r.budgetExhausted).map((r) => r.pathId);
  if (cut.length === 0 || !opts.budget) return {};
  return { budgetExhausted: { maxTokens: opts.budget.maxTokens, maxCostUsd: opts.budget.maxCostUsd, pathsWithRepairsSkipped: cut } };
}
