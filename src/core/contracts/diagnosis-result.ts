import { z } from "zod";
import { SerializedEvidenceGraph } from "./evidence.js";
import { FhirNotesSummary, IgnoredResource } from "./fhir-origin.js";

/** docs/architecture.md#data-contracts: the output contract. Field names are fixed; clients and stored results rely on them. */
export const Stage = z.enum(["visual", "knowledge", "reasoning"]);
export type Stage = z.infer<typeof Stage>;
export const Verdict = z.enum(["supported", "contradicted", "unsupported"]);
export type Verdict = z.infer<typeof Verdict>;
export const Severity = z.enum(["LOW", "MEDIUM", "HIGH"]);
export type Severity = z.infer<typeof Severity>;

export const Claim = z.object({
  text: z.string(),
  verdict: Verdict.optional(),
  evidence: z.array(z.string()).default([]),
});
export const PathStep = z.object({ text: z.string(), stage: Stage, claims: z.array(Claim) });
export const ReasoningPath = z.object({
  id: z.string(),
  summary: z.string(),
  steps: z.array(PathStep),
});
export type ReasoningPath = z.infer<typeof ReasoningPath>;

export const ClaimVerdict = z.object({
  claim: z.string(),
  verdict: Verdict,
  evidence: z.array(z.string()),
  stage: Stage,
});
/** A path whose labelled steps fit no valid path of the case's clinical pathway (docs/architecture.md#clinical-pathways-and-conversations). */
export const ContextConflict = z.object({
  pathway: z.string(),
  steps: z.array(z.string()),
  labels: z.record(z.string(), z.string()),
  closestPath: z.string().optional(),
  issue: z.string(),
});
export type ContextConflict = z.infer<typeof ContextConflict>;

export const HdReport = z.object({
  attempt: z.number().int(),
  hallucinationDetected: z.boolean(),
  recommendation: z.string(),
  severity: Severity,
  issues: z.array(z.string()),
  improvementInstructions: z.array(z.string()),
  claims: z.array(ClaimVerdict),
  /** The path as it stood when this report was written (for the repair diff in the audit view). */
  path: ReasoningPath.optional(),
  /** Set when the path leaves the case's pathway: a HIGH reasoning-stage hallucination. */
  contextConflict: ContextConflict.optional(),
});
export type HdReport = z.infer<typeof HdReport>;

export const CuScores = z.object({
  evidence: z.number(),
  coherence: z.number(),
  repairPenalty: z.number(),
  cu: z.number(),
});
export type CuScores = z.infer<typeof CuScores>;

export const Candidate = z.object({
  pathId: z.string(),
  initialAnswer: z.string().nullable(),
  finalAnswer: z.string().nullable(),
  repairs: z.number().int(),
  /** How many rollouts produced this same initial path (deduplicated before refinement). */
  multiplicity: z.number().int().optional(),
  scores: CuScores.nullable(),
  selected: z.boolean(),
  hdReports: z.array(HdReport),
  error: z.object({ code: z.string(), message: z.string() }).optional(),
  /** The answer cluster of its final answer (stability.clusters[].key; the initial answer's when no final path). */
  cluster: z.string().nullable().optional(),
  /** The models behind this path: of the rollouts that produced it, of its verdicts (null: no hallucination check ran) and of its repairs (null: none). */
  models: z.object({ rollouts: z.array(z.string()), verdicts: z.string().nullable(), repairs: z.string().nullable() }).optional(),
});
export type Candidate = z.infer<typeof Candidate>;

export const Hallucination = z.object({
  pathId: z.string(),
  attempt: z.number().int(),
  stage: Stage,
  severity: Severity,
  claim: z.string(),
  issue: z.string(),
  resolved: z.boolean(),
});
export type Hallucination = z.infer<typeof Hallucination>;

export const AgentUsage = z.object({
  calls: z.number().int(),
  promptTokens: z.number().int().optional(),
  completionTokens: z.number().int().optional(),
  costUsd: z.number().optional(),
  latencyMs: z.number().optional(),
  failures: z.number().int().optional(),
  cacheHits: z.number().int().optional(),
  /** Characters of prompt text and image data sent (what providers' prompt caches see). */
  promptChars: z.number().int().optional(),
  /** Prompt tokens the provider served from its prompt cache (OpenAI, Azure, vLLM: usage.prompt_tokens_details.cached_tokens); part of promptTokens. */
  cachedPromptTokens: z.number().int().optional(),
  /** Bytes of image data sent (decoded, summed over calls: an image sent to five calls counts five times). */
  imageBytes: z.number().int().optional(),
  /** Prompt tokens the images took, as the provider states them (usage.prompt_tokens_details.image_tokens); 0 where it does not. */
  imageTokens: z.number().int().optional(),
  /** Completion tokens the model spent reasoning (usage.completion_tokens_details.reasoning_tokens); part of completionTokens, billed as output. */
  reasoningTokens: z.number().int().optional(),
  /** Calls of a model without a price (none stated by the provider, the configuration or the catalog): their cost is unknown, not 0. */
  unpricedCalls: z.number().int().optional(),
  /** Calls whose reply had no usage: their tokens were counted from the text by a tokenizer estimate. */
  estimatedCalls: z.number().int().optional(),
});
export const Usage = z.object({
  llmCalls: z.number().int(),
  searchCalls: z.number().int(),
  promptTokens: z.number().int(),
  completionTokens: z.number().int(),
  costUsd: z.number(),
  wallMs: z.number(),
  byAgent: z.record(z.string(), AgentUsage),
  cacheHits: z.number().int().optional(),
  /** Longest chain of dependent model/search calls in this case (for critical-path latency). */
  criticalPathCalls: z.number().int().optional(),
  /** Prompt tokens the provider served from its prompt cache; part of promptTokens, priced at the cached-input rate. */
  cachedPromptTokens: z.number().int().optional(),
  /** Bytes of image data sent to the model, over all calls. */
  imageBytes: z.number().int().optional(),
  /** Prompt tokens the images took over all calls, as the provider states them; 0 where it does not (OpenAI's chat API counts them in prompt_tokens without saying). */
  imageTokens: z.number().int().optional(),
  /** Completion tokens reasoning models spent thinking, over all calls; part of completionTokens, billed at the output rate. */
  reasoningTokens: z.number().int().optional(),
  /** Model calls whose cost is unknown (no price anywhere): costUsd leaves them out, and reports say "unpriced". */
  unpricedCalls: z.number().int().optional(),
  /** Model calls counted by a tokenizer estimate (their reply had no usage): their tokens and cost are estimates. */
  estimatedCalls: z.number().int().optional(),
});
export type Usage = z.infer<typeof Usage>;

/** Rollout answers that mean the same (docs/architecture.md#scores); `rollouts` index stability.rolloutAnswers. */
export const AnswerClusterSchema = z.object({
  key: z.string(),
  canonical: z.string(),
  rollouts: z.array(z.number().int()),
  rule: z.enum(["identical", "normalised", "abbreviation", "judge", "option"]),
  wordings: z.array(z.string()).optional(),
});

/** A diagnosis of the ranked differential: one answer cluster with its support, best first. */
export const DifferentialEntry = z.object({
  rank: z.number().int(),
  answer: z.object({ option: z.string().nullable(), text: z.string() }),
  wordings: z.array(z.string()),
  rollouts: z.number().int(),
  of: z.number().int(),
  share: z.number(),
  bestCu: z.number().nullable(),
  candidateIndex: z.number().int().nullable(),
  cluster: z.string().optional(),
  /** A terminology code the configured server returned for the wording (never one the model wrote). */
  code: z.object({ system: z.string(), code: z.string(), display: z.string() }).optional(),
});
export type DifferentialEntry = z.infer<typeof DifferentialEntry>;

/** The reply a person reads for an open-ended question, its claims as the hallucination detector judged them. */
export const ComposedReply = z.object({
  text: z.string(),
  claims: z.array(z.object({ text: z.string(), verdict: z.string() })),
  removedClaims: z.number().int(),
});
export type ComposedReply = z.infer<typeof ComposedReply>;

/** How the rollout answers were clustered: the judge's part and which wordings were merged by which rule. */
export const AnswerClusteringNote = z.object({
  judge: z.enum(["not-needed", "answered", "failed", "out-of-contract"]),
  /** The wordings shown to the judge, numbered from 1. */
  asked: z.array(z.string()),
  rationale: z.string().optional(),
  note: z.string().optional(),
  merged: z.array(z.object({ rule: z.string(), wordings: z.array(z.string()) })),
});

/**
 * How the case's images reached each model whose calls carry them, where some model takes no
 * images (its profile's `imagesPerRequest: 0`): absent when every model was sent the images,
 * or the case has none.
 */
export const ImageInputNote = z.object({
  /** The vision model whose description of the images stood in for them; null: no model took images, none described them. */
  describedBy: z.string().nullable(),
  models: z.array(
    z.object({
      role: z.enum(["executor", "vision", "judge"]),
      model: z.string(),
      /** images: its calls carried the images; description: describedBy's description in their place; nothing: neither. */
      saw: z.enum(["images", "description", "nothing"]),
      /** What that meant for the case, in words. */
      note: z.string(),
    }),
  ),
});
export type ImageInputNote = z.infer<typeof ImageInputNote>;

export const BranchFailure = z.object({
  branch: z.string(),
  code: z.string(),
  message: z.string(),
});
export type BranchFailure = z.infer<typeof BranchFailure>;

export const DiagnosisResult = z.object({
  caseId: z.string(),
  status: z.enum(["completed", "abstained", "failed"]),
  answer: z.object({ option: z.string().nullable(), text: z.string() }).nullable(),
  answerSupport: z.number().nullable(),
  abstentionReason: z.string().nullable(),
  path: ReasoningPath.nullable(),
  /** E_p, the selected path's supporting subgraph, as EvidenceGraph.export() writes it. */
  evidenceGraph: SerializedEvidenceGraph.nullable(),
  candidates: z.array(Candidate),
  stability: z.object({
    rolloutAnswers: z.array(z.string().nullable()),
    distribution: z.record(z.string(), z.number()),
    rgm: z.number(),
    entropy: z.number(),
    /** The rollout answers grouped by meaning; distribution, rgm and entropy are over these (absent in results stored before clusters). */
    clusters: z.array(AnswerClusterSchema).optional(),
    /** The same figures over the lexical answer keys (what distribution, rgm and entropy were before clusters). */
    lexical: z.object({ distribution: z.record(z.string(), z.number()), rgm: z.number(), entropy: z.number() }).optional(),
  }),
  /** The answer clusters ranked, best first (rank 1 is the result's answer); [] when there is no answer. Absent in results stored before it. */
  differential: z.array(DifferentialEntry).optional(),
  /** For an open-ended question when a reply was composed: what a person reads, only verified claims in it. */
  reply: ComposedReply.optional(),
  hallucinations: z.array(Hallucination),
  usage: Usage,
  provenance: z.object({
    models: z.record(z.string(), z.string()),
    /** The model of each rollout, in the order of stability.rolloutAnswers (rollouts spread over MEDMMV_ROLLOUT_MODELS differ). */
    rolloutModels: z.array(z.string()).optional(),
    prompts: z.record(z.string(), z.string()),
    config: z.record(z.string(), z.unknown()),
    search: z.object({ provider: z.string(), enabled: z.boolean(), note: z.string().optional() }).optional(),
    failures: z.array(BranchFailure).optional(),
    /** How the case's images reached each model, where some model takes none (described by the vision model, or not seen). */
    imageInput: ImageInputNote.optional(),
    untrustedContent: z.array(z.object({ source: z.string(), note: z.string() })).optional(),
    /** Cases from a FHIR Bundle: resources (or parts) that did not go into the case, and why. */
    ignoredResources: z.array(IgnoredResource).optional(),
    /** Cases from a FHIR Bundle: how the record was summarised to the notes budget (counts per resource type). */
    fhirNotes: FhirNotesSummary.optional(),
    /** How the rollout answers were compared by meaning (equivalence judge, merge rules). */
    answerClusters: AnswerClusteringNote.optional(),
    /** MEDMMV_TERMINOLOGY_URL: the value set the differential was coded from, entries looked up and coded, and why lookups failed. */
    terminology: z.object({ valueSet: z.string(), looked: z.number().int(), coded: z.number().int(), note: z.string().optional() }).optional(),
    /** What the checks on evidence agents did: fabricated quotes dropped, image findings flagged/revised. */
    evidenceChecks: z
      .object({
        textDoctor: z.object({ accepted: z.number().int(), rejected: z.array(z.object({ label: z.string(), reason: z.string() })) }),
        imageDoctor: z.array(z.object({ attempt: z.number().int(), hallucinationDetected: z.boolean(), flagged: z.array(z.object({ label: z.string(), issue: z.string() })) })),
        webSearch: z.object({ pairsPlanned: z.number().int(), pairsSearched: z.number().int() }),
      })
      .optional(),
    startedAt: z.string(),
    finishedAt: z.string(),
    version: z.string(),
  }),
  error: z.object({ code: z.string(), message: z.string() }).optional(),
  /**
   * The case's budget (request maxTokens / maxCostUsd, or the server's default) was reached:
   * the remaining repairs of these paths were skipped and selection ran on what existed.
   */
  budgetExhausted: z
    .object({
      maxTokens: z.number().int().nullable(),
      maxCostUsd: z.number().nullable(),
      pathsWithRepairsSkipped: z.array(z.string()),
    })
    .optional(),
  disclaimer: z.string(),
});
export type DiagnosisResult = z.infer<typeof DiagnosisResult>;

export const DISCLAIMER = "Decision support for clinicians; not a diagnosis.";
