/**
 * Rollout answers clustered by meaning (scoring/answer-clusters.ts), with one equivalence-judge
 * call for what the rules leave apart. The call is made in a branch sent beside the refine
 * branches (nodes/cluster-answers.ts): refinement needs only the rule groups (paths are
 * deduplicated by them), selection needs the clusters, so the judge runs while the paths are
 * checked and adds no link to the critical path.
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
    // A verdict is reused; a failed call (a timeout, a 503) is not: the final clustering asks again.
    const asking = pending;
    void asking.then((o) => {
      if (o.status === "failed" && memo.get(key) === asking) memo.delete(key);
    });
  }
  const judge = await pending;
  return { clusters: buildClusters(answers, groups, judge.judged ?? null), judge };
}

/**
 * The judge verdicts of each running case, so that the final clustering reuses the verdict an
 * agreeing adaptive first round already paid for. In memory, per case (thread id) and process,
 * like AdaptiveRounds: coordination, not data (a resumed case merely asks again).
 */
export class AnswerClusterings {
  private readonly byThread = new Map<string, JudgeMemo>();

  open(threadId: string): void {
    this.byThread.set(threadId, new Map());
  }

  close(threadId: string): void {
    this.byThread.delete(threadId);
  }

  /** The judge memo of a running case (a fresh one for a case not open here). */
  memo(threadId: string | undefined): JudgeMemo {
    return (threadId && this.byThread.get(threadId)) || new Map();
  }
}
