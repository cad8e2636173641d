import type { RunnableConfig } from "@langchain/core/runnables";
import { runHdSupervisor } from "../../agents/hd-supervisor.js";
import { CHECKED_KINDS, replyAsPath, runReplyComposer } from "../../agents/reply-composer.js";
import { DiagnosisResult, type ComposedReply } from "../../contracts/diagnosis-result.js";
import { describeError } from "../../contracts/errors.js";
import { EvidenceGraph } from "../../evidence/evidence-graph.js";
import { renderEvidenceForPrompt } from "../../evidence/render-for-prompt.js";
import { UsageMeter } from "../../llm/usage.js";
import { nodeCallContext, type WorkflowDeps } from "../run-context.js";
import type { PipelineStateUpdate, PipelineStateValue } from "../state.js";

/** A reply is composed for an open-ended question that was answered, when the case asks for one. */
export function wantsReply(state: PipelineStateValue): boolean {
  const r = state.result;
  const options = state.caseInput.options;
  return state.options.composeReply === true && !!r && r.status === "completed" && !!r.answer && (!options || Object.keys(options).length === 0);
}

/**
 * After selection, for an open-ended question: the composer writes the reply a person reads
 * from the selected path, the differential and the evidence; the hallucination detector checks
 * its factual statements like a path's claims, and a statement it does not find supported is
 * left out of the text (counted in removedClaims, listed with its verdict). A composer or
 * detector that fails leaves the result without a reply, said in provenance.failures.
 */
export function composeReplyNode(deps: WorkflowDeps) {
  return async (state: PipelineStateValue, config: RunnableConfig): Promise<PipelineStateUpdate> => {
    const result = state.result!;
    const started = Date.now();
    const c = deps.images.hydrate(state.caseInput);
    const ctx = nodeCallContext(deps, config, c.id, result.usage.criticalPathCalls ?? 0);
    const evidence = state.evidence;
    const graph = evidence && !evidence.prompt ? EvidenceGraph.import(evidence.graph) : null;
    const evidenceText = evidence?.prompt?.text ?? (graph ? renderEvidenceForPrompt(graph) : "");
    const active = new Set(evidence?.prompt?.activeNodeIds ?? graph?.activeNodeIds() ?? []);
    let reply: ComposedReply | undefined;
    let failure: { branch: string; code: string; message: string } | undefined;
    try {
      const composed = await runReplyComposer(deps.agents, ctx, c, { result, evidenceText });
      const path = replyAsPath(composed, result.answer!);
      const report = path.steps.length ? await runHdSupervisor(deps.agents, ctx, c, { path, evidenceText, knownNodeIds: (id) => active.has(id), attempt: 1 }) : null;
      let checked = 0;
      const claims: ComposedReply["claims"] = [];
      const kept: string[] = [];
      for (const s of composed.statements) {
        if (!CHECKED_KINDS.has(s.kind)) {
          kept.push(s.text.trim());
          continue;
        }
        const verdict = report?.claims[checked++]?.verdict ?? "unsupported";
        claims.push({ text: s.text.trim(), verdict });
        if (verdict === "supported") kept.push(s.text.trim());
      }
      const removed = claims.filter((x) => x.verdict !== "supported").length;
      const note = removed ? ` (${removed} statement${removed === 1 ? "" : "s"} that could not be verified against the record and the evidence ${removed === 1 ? "was" : "were"} left out.)` : "";
      reply = { text: `${kept.join(" ")}${note}`.trim(), claims, removedClaims: removed };
    } catch (err) {
      failure = { branch: "compose-reply", ...describeError(err) };
    }
    const meter = new UsageMeter(deps.prices);
    meter.absorb(result.usage);
    meter.absorb(ctx.meter.snapshot(Date.now() - started));
    const finishedAt = new Date().toISOString();
    const next: DiagnosisResult = {
      ...result,
      ...(reply ? { reply } : {}),
      usage: meter.snapshot(Date.parse(finishedAt) - Date.parse(state.startedAt)),
      provenance: {
        ...result.provenance,
        prompts: { ...result.provenance.prompts, ...deps.prompts.hashes(["reply-composer"]) },
        ...(failure ? { failures: [...(result.provenance.failures ?? []), failure] } : {}),
        finishedAt,
      },
    };
    return { result: DiagnosisResult.parse(next) };
  };
}
