import type { DiagnosisResult } from "../contracts/diagnosis-result.js";
import type { RefinedPath, RolloutRecord } from "./state.js";

/** How a case ends: answered, abstained (with the reason shown to the clinician) or failed. */
export interface CaseOutcome {
  status: DiagnosisResult["status"];
  abstentionReason: string | null;
  error?: { code: string; message: string };
}

/** Failures that name one cause the operator acts on (a provider's filter, a model's limit), not an outage. */
const ONE_CAUSE = new Set(["CONTENT_FILTERED", "MODEL_REFUSED", "MODEL_PARAMETER_UNSUPPORTED", "CONTEXT_TOO_LONG", "CONTEXT_TRUNCATED", "MODEL_NO_IMAGES", "QUOTA_EXCEEDED", "OUTPUT_TRUNCATED"]);

/** The code every rollout failed with, when it is one of those: the case failed for that reason. */
function sharedCause(rollouts: readonly RolloutRecord[]): string | undefined {
  const codes = new Set(rollouts.map((r) => r.error?.code));
  const [only] = codes;
  return codes.size === 1 && only !== undefined && ONE_CAUSE.has(only) ? only : undefined;
}

/**
 * When the pipeline refuses to answer. It fails when no path survived refinement; it abstains
 * when the selected path commits to no option of a multiple-choice question, or when every
 * scored path still carries a HIGH-severity hallucination after the repair budget — an answer
 * then would rest on claims the detector rejected, so saying nothing is the safer output for
 * decision support.
 */
export function decideOutcome(input: {
  selected: RefinedPath | null;
  refined: readonly RefinedPath[];
  rollouts: readonly RolloutRecord[];
  options: Record<string, string> | undefined;
}): CaseOutcome {
  const { selected: sel, refined, rollouts, options } = input;
  if (!sel || !sel.final) {
    const noRollouts = rollouts.every((r) => !r.path);
    return {
      status: "failed",
      abstentionReason: null,
      error: noRollouts
        ? { code: sharedCause(rollouts) ?? "PIPELINE_FAILED", message: `all ${rollouts.length} rollouts failed (first error: ${rollouts.find((r) => r.error)?.error?.message ?? "unknown"})` }
        : { code: "PIPELINE_FAILED", message: `no candidate path could be refined and scored (${refined.length} tried)` },
    };
  }
  const finalAnswer = sel.final.answer;
  if (!finalAnswer || (!finalAnswer.option && options && Object.keys(options).length > 0)) {
    return { status: "abstained", abstentionReason: "the selected path did not commit to one of the answer options" };
  }
  const last = sel.hdReports.at(-1);
  if (last && last.hallucinationDetected && last.severity === "HIGH" && refined.every((r) => !r.scores || r.hdReports.at(-1)?.severity === "HIGH")) {
    return { status: "abstained", abstentionReason: "every candidate path still had a high-severity hallucination after the repair budget was spent" };
  }
  return { status: "completed", abstentionReason: null };
}
