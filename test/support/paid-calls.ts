import { createHash } from "node:crypto";
import type { Scenario, ScriptedRequest } from "../../src/scripted/scripted-openai-server.js";

/**
 * What the scripted provider was paid for, per case: every request's prompt (agent and
 * messages, hashed) with the time it arrived. A call that arrives twice with the same
 * prompt for the same case was paid twice. After a replica dies, the case resumes from its
 * last checkpoint, so the calls its interrupted step had made are made again — and only
 * those: a repeated call whose first copy arrived before that checkpoint was paid twice for
 * work the checkpoint already held.
 */
export interface PaidCall {
  caseTag: string;
  promptKey: string;
  at: number;
}

export interface PaidCalls {
  /** The scenario with every agent's script wrapped to record the call first. */
  scenario: Scenario;
  calls: PaidCall[];
  reset(): void;
}

/** `tagOf` names the case a request belongs to (from its prompt text); null: not counted. */
export function recordPaidCalls(base: Scenario, tagOf: (req: ScriptedRequest) => string | null): PaidCalls {
  const calls: PaidCall[] = [];
  const wrap = (script: unknown) => (req: ScriptedRequest) => {
    const caseTag = tagOf(req);
    if (caseTag !== null) {
      const promptKey = createHash("sha256").update(req.agent).update("\u0000").update(JSON.stringify(req.messages)).digest("hex").slice(0, 32);
      calls.push({ caseTag, promptKey, at: Date.now() });
    }
    return typeof script === "function" ? (script as (r: ScriptedRequest) => unknown)(req) : script;
  };
  const agents: Scenario["agents"] = {};
  for (const [name, script] of Object.entries(base.agents)) agents[name] = wrap(script);
  const scenario: Scenario = { ...base, agents, ...(base.fallback !== undefined ? { fallback: wrap(base.fallback) } : {}) };
  return { scenario, calls, reset: () => void calls.splice(0) };
}

export interface RepaidSummary {
  /** Calls made more than once with the same prompt, over all cases. */
  repaid: number;
  /** Of those, calls whose first copy arrived before the checkpoint its case resumed from. */
  beyondCheckpoint: Array<{ caseTag: string; promptKey: string; firstAt: number; checkpointAt: number }>;
  /** Distinct prompts per case. */
  distinctByCase: Map<string, number>;
}

/**
 * Repeated calls per case, judged against `resumedFrom` (per case, the time of the last
 * checkpoint written before the fault): a repeat is allowed only when its first copy
 * arrived after that checkpoint. A case without an entry had no checkpoint then (not yet
 * started, or finished): it may repeat nothing.
 */
export function repaidCalls(calls: readonly PaidCall[], resumedFrom: ReadonlyMap<string, number>): RepaidSummary {
  const first = new Map<string, PaidCall>();
  const distinctByCase = new Map<string, number>();
  let repaid = 0;
  const beyondCheckpoint: RepaidSummary["beyondCheckpoint"] = [];
  for (const c of calls) {
    const key = `${c.caseTag}\u0000${c.promptKey}`;
    const earlier = first.get(key);
    if (!earlier) {
      first.set(key, c);
      distinctByCase.set(c.caseTag, (distinctByCase.get(c.caseTag) ?? 0) + 1);
      continue;
    }
    repaid++;
    const checkpointAt = resumedFrom.get(c.caseTag) ?? Number.POSITIVE_INFINITY;
    if (earlier.at < checkpointAt) beyondCheckpoint.push({ caseTag: c.caseTag, promptKey: c.promptKey, firstAt: earlier.at, checkpointAt });
  }
  return { repaid, beyondCheckpoint, distinctByCase };
}
