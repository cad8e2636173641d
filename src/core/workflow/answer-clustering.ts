/**
 * Rollout answers clustered by meaning (scoring/answer-clusters.ts), with one equivalence-judge
 * call for what the rules leave apart. The call is made by the rollout branch that finishes
 * last, inside the superstep the evidence agents still run in: it adds a link to the critical
 * path only when the rollouts' chain plus the judge is longer than the evidence chain (a join
 * node would put it behind the whole evidence chain). plan-refinement clusters the answers
 * itself when that did not happen (a case resumed from a checkpoint).
 */
import type { PreparedCase } from "../contracts/clinical-case.js";
import type { Usage } from "../contracts/diagnosis-result.js";
import { describeError } from "../contracts/errors.js";
import type { CallContext } from "../llm/model-client.js";
import type { AgentDeps } from "../agents/agent-context.js";
import { runEquivalenceJudge } from "../agents/equivalence-judge.js";
import { buildClusters, groupsForJudge, readJudgeGroups, ruleGroups, type AnswerCluster, type AnswerLike } from "../scoring/answer-clusters.js";

/** What the equivalence judge did for a case (provenance.answerClusters). */
export interface JudgeOutcome {
  /** not-needed: the rules left at most one free-text group; failed / out-of-contract: the answers stay unmerged. */
  status: "not-needed" | "answered" | "failed" | "out-of-contract";
  /** The wordings it was shown, numbered from 1 as in its prompt. */
  asked: string[];
  /** Each asked wording's group (0-based), when it answered by the contract. */
  judged?: number[];
  rationale?: string;
  /** Why the answers were left unmerged. */
  note?: string;
}

/** The clusters of a case's rollout answers, as the state carries them. */
export interface AnswerClusterRecord {
  /** Rollout indices whose answers were clustered (the answers' positions in stability.rolloutAnswers). */
  covers: number[];
  clusters: AnswerCluster[];
  judge: JudgeOutcome;
  /** The judge call made for this record (null: none, or one an earlier step made and paid for). */
  usage: Usage | null;
  /** Call-chain depth when the clusters were known. */
  depth: number;
}

/** Memo of judge outcomes by the wordings asked, so a settled adaptive round is not judged twice. */
export type JudgeMemo = Map<string, Promise<JudgeOutcome>>;

async function askJudge(deps: AgentDeps, ctx: CallContext, c: PreparedCase, asked: string[]): Promise<JudgeOutcome> {
  try {
    const reply = await runEquivalenceJudge(deps, ctx, c, asked);
    const read = readJudgeGroups(reply.groups, asked.length);
    if ("outOfContract" in read) return { status: "out-of-contract", asked, note: `the equivalence judge answered out of contract (${read.outOfContract}): the answers were left unmerged` };
    return { status: "answered", asked, judged: read.judged, ...(reply.rationale ? { rationale: reply.rationale.slice(0, 500) } : {}) };
  } catch (err) {
    const e = describeError(err);
    return { status: "failed", asked, note: `the equivalence judge failed (${e.code}: ${e.message.slice(0, 200)}): the answers were left unmerged` };
  }
}

/**
 * Cluster answers (indexed by rollout; null for a failed rollout): rules first, the judge
 * (one call, through `memo`) only for two or more free-text groups. Never throws: a judge
 * that fails leaves the rule groups as they are and says so.
 */
export async function clusterAnswers(
  deps: AgentDeps,
  ctx: CallContext,
  c: PreparedCase,
  answers: readonly (AnswerLike | null)[],
  memo: JudgeMemo = new Map(),
): Promise<{ clusters: AnswerCluster[]; judge: JudgeOutcome }> {
  const groups = ruleGroups(answers);
  const asked = groupsForJudge(groups).map((g) => g.wording);
  if (asked.length === 0) return { clusters: buildClusters(answers, groups, null), judge: { status: "not-needed", asked: [] } };
  const key = JSON.stringify(asked);
  let pending = memo.get(key);
  if (!pending) {
    pending = askJudge(deps, ctx, c, asked);
    memo.set(key, pending);
  }
  const judge = await pending;
  return { clusters: buildClusters(answers, groups, judge.judged ?? null), judge };
}

interface Arrivals {
  expected: number;
  answers: Map<number, { answer: AnswerLike | null; depth: number; skipped: boolean }>;
  memo: JudgeMemo;
}

/**
 * Which rollout branch of a running case is the last, so that it clusters the answers.
 * In memory, per case (thread id) and process, like AdaptiveRounds: coordination, not data.
 */
export class AnswerClusterings {
  private readonly byThread = new Map<string, Arrivals>();

  /** `expected`: the rollout branches sent (second-round ones that stand down arrive too). */
  open(threadId: string, expected: number): void {
    this.byThread.set(threadId, { expected, answers: new Map(), memo: new Map() });
  }

  close(threadId: string): void {
    this.byThread.delete(threadId);
  }

  /** The judge memo of a running case (a fresh one for a case not open here). */
  memo(threadId: string | undefined): JudgeMemo {
    return (threadId && this.byThread.get(threadId)?.memo) || new Map();
  }

  /**
   * A rollout branch ended: its answer (null when it failed; `skipped` when it stood down).
   * Returns, to the branch that completes the set only, the answers by rollout index (skipped
   * ones left out) and the deepest chain among them.
   */
  arrive(threadId: string | undefined, index: number, answer: AnswerLike | null, depth: number, skipped = false): { answers: (AnswerLike | null)[]; covers: number[]; depth: number } | null {
    const a = threadId ? this.byThread.get(threadId) : undefined;
    if (!a || a.answers.has(index)) return null;
    a.answers.set(index, { answer, depth, skipped });
    if (a.answers.size < a.expected) return null;
    const ran = [...a.answers.entries()].filter(([, v]) => !v.skipped);
    const covers = ran.map(([i]) => i).sort((x, y) => x - y);
    const answers = Array.from({ length: (covers.at(-1) ?? -1) + 1 }, (_, i) => a.answers.get(i)?.answer ?? null);
    return { answers, covers, depth: Math.max(0, ...ran.map(([, v]) => v.depth)) };
  }
}
