import { Annotation } from "@langchain/langgraph";
import type { CaseInState } from "../intake/image-vault.js";
import type { BranchFailure, DiagnosisResult, HdReport, CuScores, Usage } from "../contracts/diagnosis-result.js";
import type { PathOutput } from "../contracts/reasoning-path.js";
import type { SerializedEvidenceGraph } from "../evidence/evidence-graph.js";
import type { CaseBudget, Spend } from "./case-budget.js";
import type { AnswerClusterRecord } from "./answer-clustering.js";

/** Options a case runs with (config defaults, overridden per request / per eval run). */
export interface PipelineOptions {
  k: number;
  maxRepairs: number;
  weights: [number, number, number];
  rolloutTemperature: number;
  maxSearchPairs: number;
  /** Sample rollouts in rounds and stop when the first round already agrees. */
  adaptive: boolean;
  /** Refine identical rollouts once (counted with their multiplicity). */
  dedupe: boolean;
  select: "cu" | "random" | "majority";
  seed: number;
  ablations: { noExpansion: boolean; noHd: boolean; noTextDoctor: boolean; noImageDoctor: boolean; noWebSearch: boolean };
  /** Compose a verified reply for an open-ended question (nodes/compose-reply.ts); absent in older checkpoints: off. */
  composeReply?: boolean;
  /** Per-case budget; absent in checkpoints written before budgets existed. */
  budget?: CaseBudget;
}

export interface RolloutRecord {
  index: number;
  path: PathOutput | null;
  /** The model it ran on (absent in checkpoints written before rollouts could be spread over models). */
  model?: string;
  error?: { code: string; message: string };
  /** A second-round adaptive rollout not sampled because the first round agreed. */
  skipped?: true;
  usage: Usage;
  /** Call-chain depth at the end of this branch (for the critical path). */
  depth: number;
}

/**
 * The evidence graph as the refine prompts show it, rendered once per case when the graph
 * is complete. Every refine branch used to import (validate + clone) and render the full
 * graph itself: ≈ 6 ms of CPU per path, all of it at the moment the m branches start
 * together (`npm run bench`, critical-path profile).
 */
export interface EvidencePrompt {
  text: string;
  /** Ids of the active nodes: the only ids a verdict may cite. */
  activeNodeIds: string[];
}

export interface EvidenceRecord {
  graph: SerializedEvidenceGraph;
  /** Absent in checkpoints written before it existed; refine-path then renders the graph. */
  prompt?: EvidencePrompt;
  depth: number;
  usage: Usage;
  failures: BranchFailure[];
  textDoctor: { accepted: number; rejected: Array<{ label: string; reason: string }> };
  imageChecks: Array<{ attempt: number; hallucinationDetected: boolean; flagged: Array<{ label: string; issue: string }> }>;
  search: { provider: string; enabled: boolean; note?: string; pairsPlanned: number; pairsSearched: number };
  untrusted: Array<{ source: string; note: string }>;
}

/** One distinct initial path scheduled for refinement. */
export interface PlannedPath {
  pathId: string;
  rolloutIndices: number[];
  path: PathOutput;
}

export interface RefinedPath {
  pathId: string;
  multiplicity: number;
  initial: PathOutput;
  final: PathOutput | null;
  repairs: number;
  hdReports: HdReport[];
  coherence: number | null;
  scores: CuScores | null;
  /** Evidence node ids cited by supported claims of the final path. */
  evidenceIds: string[];
  error?: { code: string; message: string };
  usage: Usage;
  depth: number;
  /** The case's budget was reached before this path's next repair: it was skipped. */
  budgetExhausted?: true;
}

const append = <T>() =>
  Annotation<T[]>({
    reducer: (a, b) => a.concat(b),
    default: () => [],
  });

export const PipelineState = Annotation.Root({
  caseInput: Annotation<CaseInState>,
  options: Annotation<PipelineOptions>,
  startedAt: Annotation<string>,
  /** Parallel branches write only through these reducers (docs/architecture.md#house-style). */
  rollouts: append<RolloutRecord>(),
  refined: append<RefinedPath>(),
  evidence: Annotation<EvidenceRecord | null>({ reducer: (_a, b) => b, default: () => null }),
  plan: Annotation<PlannedPath[]>({ reducer: (_a, b) => b, default: () => [] }),
  /** The rollout answers clustered by meaning (answer-clustering.ts); null until known (and in older checkpoints). */
  answerClusters: Annotation<AnswerClusterRecord | null>({ reducer: (_a, b) => b, default: () => null }),
  /**
   * Rollout indices requested by the last planning step: only for adaptive cases whose
   * checkpoint predates sending every rollout at START (adaptive-rounds.ts).
   */
  pendingRollouts: Annotation<number[]>({ reducer: (_a, b) => b, default: () => [] }),
  result: Annotation<DiagnosisResult | null>({ reducer: (_a, b) => b, default: () => null }),
});

export type PipelineStateValue = typeof PipelineState.State;
export type PipelineStateUpdate = typeof PipelineState.Update;

/** What a rollout branch receives through Send. */
export interface RolloutTask {
  caseInput: CaseInState;
  options: PipelineOptions;
  index: number;
  startDepth: number;
}

/** What a refinement branch receives through Send. */
export interface RefineTask {
  caseInput: CaseInState;
  options: PipelineOptions;
  planned: PlannedPath;
  multiplicity: number;
  /** The rendered evidence (normal case), or the graph itself for an old checkpoint's evidence. */
  evidence: EvidencePrompt | { graph: SerializedEvidenceGraph };
  startDepth: number;
  /** What the case spent before refinement (rollouts and evidence), from the state. */
  spentBefore?: Spend;
}
