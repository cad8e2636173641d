import type { PreparedCase } from "../contracts/clinical-case.js";
import type { CallContext } from "../llm/model-client.js";
import type { HdReport } from "../contracts/diagnosis-result.js";
import { answerInstruction, callAgent, neutralise, type AgentDeps } from "./agent-context.js";
import { normaliseAnswer, renderPathForPrompt } from "./path-rendering.js";
import { PathOutput } from "../contracts/reasoning-path.js";

/** AutoRepair: revise a flagged path following the detector's report (executor, temperature 0). */
export async function runAutoRepair(
  deps: AgentDeps,
  ctx: CallContext,
  c: PreparedCase,
  input: { path: PathOutput; report: HdReport; evidenceText: string },
): Promise<PathOutput> {
  // The detector's report is model output going into a MODEL_OUTPUT fence.
  const report = neutralise([
    `severity: ${input.report.severity}`,
    ...input.report.issues.map((i) => `issue: ${i}`),
    ...input.report.improvementInstructions.map((i) => `instruction: ${i}`),
    ...input.report.claims.filter((x) => x.verdict !== "supported").map((x) => `${x.verdict} claim: ${x.claim}`),
  ].join("\n"));
  const out = await callAgent(deps, ctx, c, {
    agent: "auto-repair",
    role: "executor",
    temperature: 0,
    schema: PathOutput,
    withImages: true,
    evidence: input.evidenceText,
    slots: { path: renderPathForPrompt(input.path), report, answerInstruction: answerInstruction(c) },
  });
  return { ...out, answer: normaliseAnswer(out, c.options) };
}
