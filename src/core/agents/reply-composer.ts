import { z } from "zod";
import type { PreparedCase } from "../contracts/clinical-case.js";
import type { DiagnosisResult } from "../contracts/diagnosis-result.js";
import type { PathOutput } from "../contracts/reasoning-path.js";
import type { CallContext } from "../llm/model-client.js";
import { callAgent, neutralise, type AgentDeps } from "./agent-context.js";

export const ReplyOutput = z.object({
  statements: z
    .array(
      z.object({
        text: z.string().min(1).describe("One sentence of the reply"),
        kind: z.enum(["finding", "knowledge", "uncertainty", "advice"]).describe("finding / knowledge: checkable; uncertainty: what is not known; advice: what to check or do next"),
      }),
    )
    .min(1)
    .max(12)
    .describe("The reply, one sentence each, in reading order"),
});
export type ReplyOutput = z.infer<typeof ReplyOutput>;

/** The kinds of statement the hallucination detector checks (the others claim no fact). */
export const CHECKED_KINDS = new Set<ReplyOutput["statements"][number]["kind"]>(["finding", "knowledge"]);

function renderSelected(r: DiagnosisResult): string {
  const lines: string[] = [];
  r.path?.steps.forEach((s, i) => {
    lines.push(`Step ${i + 1} [${s.stage}]: ${neutralise(s.text)}`);
    for (const c of s.claims) lines.push(`  - [${c.verdict ?? "unchecked"}] ${neutralise(c.text)}`);
  });
  if (r.answer) lines.push(`Answer: ${r.answer.option ? `(${neutralise(r.answer.option)}) ` : ""}${neutralise(r.answer.text)}`);
  return lines.join("\n");
}

function renderDifferential(r: DiagnosisResult): string {
  const rows = r.differential ?? [];
  if (rows.length === 0) return "(none)";
  return rows.map((d) => `${d.rank}. ${neutralise(d.answer.text)}: ${d.rollouts} of ${d.of} runs`).join("\n");
}

/** The reply's statements (executor, temperature 0), written from the result and the evidence graph. */
export async function runReplyComposer(deps: AgentDeps, ctx: CallContext, c: PreparedCase, input: { result: DiagnosisResult; evidenceText: string }): Promise<ReplyOutput> {
  return callAgent(deps, ctx, c, {
    agent: "reply-composer",
    role: "executor",
    temperature: 0,
    schema: ReplyOutput,
    evidence: input.evidenceText,
    slots: { path: renderSelected(input.result), differential: renderDifferential(input.result) },
  });
}

/**
 * The reply's checkable statements as a path the hallucination detector reads like any other:
 * one step per statement, the statement its one claim.
 */
export function replyAsPath(reply: ReplyOutput, answer: PathOutput["answer"]): PathOutput {
  const checked = reply.statements.filter((s) => CHECKED_KINDS.has(s.kind));
  return {
    steps: checked.map((s) => ({ text: s.text, stage: s.kind === "knowledge" ? "knowledge" : "reasoning", claims: [s.text] })),
    answer,
    summary: checked.map((s) => s.text).join(" "),
  };
}
