import type { DiagnosisResult } from "../../core/contracts/diagnosis-result.js";
import type { PreparedCase } from "../../core/contracts/clinical-case.js";
import { describeError, MedmmvError } from "../../core/contracts/errors.js";
import { EvidenceGraph } from "../../core/evidence/evidence-graph.js";
import { renderEvidenceForPrompt } from "../../core/evidence/render-for-prompt.js";
import type { Pipeline } from "../../core/workflow/pipeline.js";
import type { PipelineOptions } from "../../core/workflow/state.js";
import { UsageMeter } from "../../core/llm/usage.js";
import { failedOutput, NO_HALLUCINATIONS, type EvalMethod, type MethodOutput } from "./types.js";

/** The prompts the MedMMV pipeline renders (mirrors its provenance list). */
export const MEDMMV_PROMPTS = ["system", "rollout", "text-doctor", "image-doctor", "image-hd", "image-revise", "web-search-query", "web-search-analysis", "hd-supervisor", "auto-repair", "coherence-judge", "equivalence-judge", "reply-composer"];

/**
 * The full pipeline; `seed` varies per run so `--select random` draws differently in each run.
 * `steps` keeps the final path's stage-tagged steps on the output (for --stage-judge).
 */
export function medmmvMethod(pipeline: Pipeline, options: PipelineOptions, opts: { steps?: boolean; keepDiagnosis?: boolean } = {}): EvalMethod {
  return {
    name: "medmmv",
    prompts: MEDMMV_PROMPTS,
    async run(c: PreparedCase, signal: AbortSignal): Promise<MethodOutput> {
      const started = Date.now();
      try {
        const { result, fullEvidenceGraph } = await pipeline.run(c, options, { signal });
        const out = fromDiagnosis(result);
        if (opts.keepDiagnosis) out.diagnosis = { result, fullEvidenceGraph };
        if (opts.steps) {
          out.steps = (result.path?.steps ?? []).map((s) => ({ text: s.text, stage: s.stage }));
          out.evidence = renderEvidenceForPrompt(EvidenceGraph.import(result.evidenceGraph), { maxChars: 8000 });
        }
        return out;
      } catch (err) {
        if (signal.aborted) throw err instanceof MedmmvError ? err : new MedmmvError("ABORTED", "eval cancelled", { cause: err });
        return failedOutput(describeError(err), new UsageMeter().snapshot(Date.now() - started));
      }
    },
  };
}

/** The eval's view of a DiagnosisResult: the selected path's CU parts, stability, hallucinations by stage. */
export function fromDiagnosis(r: DiagnosisResult): MethodOutput {
  const sel = r.candidates.find((c) => c.selected);
  const hallucinations = { ...NO_HALLUCINATIONS };
  for (const h of r.hallucinations) {
    hallucinations[h.stage]++;
    hallucinations.total++;
    if (h.resolved) hallucinations.resolved++;
  }
  const out: MethodOutput = {
    status: r.status,
    answer: r.answer,
    usage: r.usage,
    cu: sel?.scores ? { pathId: sel.pathId, ...sel.scores, repairs: sel.repairs } : null,
    answerSupport: r.answerSupport,
    stability: { answers: r.stability.rolloutAnswers, rgm: r.stability.rgm, entropy: r.stability.entropy, ...(r.provenance.rolloutModels ? { models: r.provenance.rolloutModels } : {}) },
    hallucinations,
    errors: r.provenance.failures ?? [],
    rationale: rationaleOf(r),
  };
  if (r.error) out.error = r.error;
  if (r.reply) out.reply = r.reply.text;
  if (r.abstentionReason) out.abstentionReason = r.abstentionReason;
  return out;
}

function rationaleOf(r: DiagnosisResult): string {
  const lines: string[] = [];
  r.path?.steps.forEach((s, i) => lines.push(`${i + 1}. ${s.text}`));
  if (r.path?.summary) lines.push(`Summary: ${r.path.summary}`);
  if (r.answer) lines.push(`Answer: ${r.answer.option ? `(${r.answer.option}) ` : ""}${r.answer.text}`);
  return lines.join("\n");
}
