import { describe, expect, it } from "vitest";
import type { HdReport } from "../../../src/core/contracts/diagnosis-result.js";
import type { PathOutput } from "../../../src/core/contracts/reasoning-path.js";
import { decideOutcome } from "../../../src/core/workflow/abstention.js";
import type { RefinedPath, RolloutRecord } from "../../../src/core/workflow/state.js";

const OPTIONS = { A: "Septic arthritis", B: "Gout" };
const path = (option: string | null): PathOutput => ({
  steps: [{ text: "Fever and a hot joint.", stage: "knowledge", claims: ["Fever suggests infection"] }],
  answer: { option, text: option ? OPTIONS[option as "A"] : "unsure" },
  summary: "s",
});
const report = (severity: HdReport["severity"], detected: boolean): HdReport => ({
  attempt: 0,
  hallucinationDetected: detected,
  recommendation: detected ? "revise" : "accept",
  severity,
  issues: [],
  improvementInstructions: [],
  claims: [],
});
const usage: RefinedPath["usage"] = { llmCalls: 0, searchCalls: 0, promptTokens: 0, completionTokens: 0, costUsd: 0, wallMs: 0, byAgent: {} };
const refined = (final: PathOutput | null, reports: HdReport[], scored = true): RefinedPath => ({
  pathId: "path-0",
  multiplicity: 1,
  initial: path("A"),
  final,
  repairs: 0,
  hdReports: reports,
  coherence: scored ? 1 : null,
  scores: scored ? { evidence: 1, coherence: 1, repairPenalty: 0, cu: 2 } : null,
  evidenceIds: [],
  usage,
  depth: 1,
});
const rollout = (p: PathOutput | null, error?: string): RolloutRecord => ({ index: 0, path: p, usage, depth: 1, ...(error ? { error: { code: "LLM_FAILED", message: error } } : {}) });

describe("decideOutcome: when the pipeline answers, abstains or fails", () => {
  it("answers when the selected path commits to an option and its last report is clean", () => {
    const sel = refined(path("A"), [report("LOW", false)]);
    expect(decideOutcome({ selected: sel, refined: [sel], rollouts: [rollout(path("A"))], options: OPTIONS })).toEqual({ status: "completed", abstentionReason: null });
  });

  it("abstains when a multiple-choice path commits to no option, but answers an open question", () => {
    const sel = refined(path(null), [report("LOW", false)]);
    expect(decideOutcome({ selected: sel, refined: [sel], rollouts: [], options: OPTIONS })).toMatchObject({ status: "abstained", abstentionReason: expect.stringMatching(/answer options/) });
    expect(decideOutcome({ selected: sel, refined: [sel], rollouts: [], options: undefined }).status).toBe("completed");
  });

  it("abstains only when every scored path still has a HIGH hallucination after repair", () => {
    const bad = refined(path("A"), [report("HIGH", true)]);
    const clean = refined(path("B"), [report("LOW", false)]);
    const unscored = refined(null, [report("LOW", false)], false);
    expect(decideOutcome({ selected: bad, refined: [bad, unscored], rollouts: [], options: OPTIONS })).toMatchObject({ status: "abstained", abstentionReason: expect.stringMatching(/high-severity/) });
    expect(decideOutcome({ selected: bad, refined: [bad, clean], rollouts: [], options: OPTIONS }).status).toBe("completed");
  });

  it("fails, saying why, when no path survived: every rollout failed, or none could be refined", () => {
    expect(decideOutcome({ selected: null, refined: [], rollouts: [rollout(null, "timeout"), rollout(null)], options: OPTIONS })).toEqual({
      status: "failed",
      abstentionReason: null,
      error: { code: "PIPELINE_FAILED", message: "all 2 rollouts failed (first error: timeout)" },
    });
    expect(decideOutcome({ selected: null, refined: [refined(null, [], false)], rollouts: [rollout(path("A"))], options: OPTIONS }).error?.message).toBe("no candidate path could be refined and scored (1 tried)");
  });
});
