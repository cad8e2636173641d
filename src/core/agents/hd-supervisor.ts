import { z } from "zod";
import type { PreparedCase } from "../contracts/clinical-case.js";
import type { CallContext } from "../llm/model-client.js";
import type { HdReport } from "../contracts/diagnosis-result.js";
import { callAgent, type AgentDeps } from "./agent-context.js";
import { claimIds, renderPathForPrompt } from "./path-rendering.js";
import { type PathOutput } from "../contracts/reasoning-path.js";

export const HdOutput = z.object({
  hallucinationDetected: z.boolean(),
  recommendation: z.string().describe('"accept" or "revise", with a short reason'),
  severity: z.enum(["LOW", "MEDIUM", "HIGH"]),
  issues: z.array(z.string()).describe("What is wrong in the path"),
  improvementInstructions: z.array(z.string()).describe("Concrete instructions to fix the path"),
  claims: z.array(
    z.object({
      claimId: z.string().describe("The claimId as given, e.g. s1c2"),
      verdict: z.enum(["supported", "contradicted", "unsupported"]),
      evidence: z.array(z.string()).describe("Ids of the evidence nodes the claim rests on"),
      stage: z.enum(["visual", "knowledge", "reasoning"]),
    }),
  ),
});

/**
 * The hallucination detector. Its output is checked, not trusted: cited node ids must
 * exist in the evidence graph (a "supported" verdict resting on no real node becomes
 * "unsupported"), every claim of the path gets a verdict (missing ones are "unsupported"),
 * and a contradicted claim always counts as a detected hallucination.
 */
export async function runHdSupervisor(
  deps: AgentDeps,
  ctx: CallContext,
  c: PreparedCase,
  input: { path: PathOutput; evidenceText: string; knownNodeIds: (id: string) => boolean; attempt: number },
): Promise<HdReport> {
  const out = await callAgent(deps, ctx, c, {
    agent: "hd-supervisor",
    role: "judge",
    temperature: 0,
    schema: HdOutput,
    evidence: input.evidenceText,
    slots: { path: renderPathForPrompt(input.path), attempt: String(input.attempt) },
  });
  const byId = new Map(out.claims.map((x) => [x.claimId.trim().toLowerCase(), x]));
  const texts = input.path.steps.flatMap((s) => s.claims.map((claim) => ({ claim, stage: s.stage })));
  const claims = claimIds(input.path).map((id, i) => {
    const v = byId.get(id);
    const evidence = (v?.evidence ?? []).filter((e) => input.knownNodeIds(e));
    let verdict = v?.verdict ?? "unsupported";
    if (verdict === "supported" && evidence.length === 0) verdict = "unsupported";
    return { claim: texts[i]!.claim, verdict, evidence, stage: v?.stage ?? texts[i]!.stage };
  });
  const contradicted = claims.some((x) => x.verdict === "contradicted");
  return {
    attempt: input.attempt,
    hallucinationDetected: out.hallucinationDetected || contradicted,
    recommendation: out.recommendation,
    severity: out.severity,
    issues: out.issues,
    improvementInstructions: out.improvementInstructions,
    claims,
    path: undefined,
  };
}
