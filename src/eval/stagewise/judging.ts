import type { AgentDeps } from "../../core/agents/agent-context.js";
import { runAnswerJudge } from "../agents/answer-judge.js";
import { runStageJudge, STAGE_NAMES } from "../agents/stage-judge.js";
import type { PreparedCase } from "../../core/contracts/clinical-case.js";
import { describeError, MedmmvError } from "../../core/contracts/errors.js";
import type { CallContext } from "../../core/llm/model-client.js";
import type { GoldAnswer } from "../datasets/types.js";
import { pyStrip } from "./python-text.js";
import { STAGE_HEADERS } from "./trace-parser.js";
import type { JudgedTrace, StageJudgment, StageJudgments, StageKey, StageTrace } from "./types.js";

/** An aborted run must stop, not be recorded as a judge failure. */
function rethrowIfAborted(err: unknown, signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw err instanceof MedmmvError ? err : new MedmmvError("ABORTED", "eval cancelled", { cause: err });
}

/** The ground truth as ClinHallu's records write it: `"C. Lung cancer"` for MC, the answer text otherwise. */
export function groundTruthText(g: GoldAnswer): string {
  return g.kind === "choice" && g.option ? `${g.option}. ${g.text}` : g.text;
}

/**
 * The option letter an MC answer appears to commit to, for the record's `answer` field: the
 * trimmed answer is a letter alone or a letter followed by `.`, `)` or `:` ("C", "C. Lung
 * cancer", "(b) …"), not a word that starts with one ("A mass …"); only letters of the options count. It never
 * decides correctness (see exactOptionLetter).
 */
export function leadingOptionLetter(answer: string, options: Record<string, string> | undefined): string | null {
  if (!options) return null;
  const m = /^\(?([A-Za-z])(?:[.):]|\)?$)/.exec(pyStrip(answer));
  const letter = m?.[1]?.toUpperCase();
  return letter !== undefined && options[letter] !== undefined ? letter : null;
}

/** The eval's `answer` of a trace: the committed option (text from the options) or the answer text. */
export function committedAnswer(answer: string, options: Record<string, string> | undefined): { option: string | null; text: string } {
  const letter = leadingOptionLetter(answer, options);
  return letter ? { option: letter, text: options![letter]! } : { option: null, text: answer.trim() };
}

const normalised = (s: string) => pyStrip(s).toLowerCase().replace(/\s+/g, " ").replace(/[.,;:!?]+$/, "");

/**
 * The option an MC answer names beyond doubt: the bare letter (`C`, `C.`, `(C)`), or the
 * letter followed by that option's own text (`C. Lung cancer`, any case). Anything else —
 * "A mass is the most likely finding" starts with a letter too — is for the judge.
 */
export function exactOptionLetter(answer: string, options: Record<string, string> | undefined): string | null {
  if (!options) return null;
  const a = pyStrip(answer);
  const bare = /^\(?([A-Za-z])\)?[.):]?$/.exec(a);
  const named = bare ? null : /^\(?([A-Za-z])[.):]\s*([\s\S]+)$/.exec(a);
  const letter = (bare ?? named)?.[1]?.toUpperCase();
  if (letter === undefined || options[letter] === undefined) return null;
  if (named && normalised(named[2]!) !== normalised(options[letter]!)) return null;
  return letter;
}

/**
 * Fill in `answerCorrect` of a valid trace. As ClinHallu does, the answer judge decides
 * every answer; with `letterShortcut` (our cheaper option, off by default) an MC answer that
 * is exactly an option's letter, or the letter with that option's text, is settled by
 * comparing letters without a call. A judge that fails (after the client's retries and
 * re-asks) gives -1, ClinHallu's "excluded". Invalid traces are not judged: they are
 * excluded from accuracy anyway.
 */
export async function judgeAnswer(deps: AgentDeps, ctx: CallContext, c: PreparedCase, gold: GoldAnswer, t: JudgedTrace, opts: { letterShortcut?: boolean } = {}): Promise<void> {
  if (!t.valid || t.answerCorrect !== null) return;
  const letter = opts.letterShortcut && gold.kind === "choice" ? exactOptionLetter(t.stages.answer, c.options) : null;
  if (letter !== null) {
    t.answerCorrect = letter === gold.option ? 1 : 0;
    t.answerReason = `option letter ${letter} ${letter === gold.option ? "matches" : "differs from"} the gold letter ${gold.option}`;
    t.answerBy = "letter";
    return;
  }
  try {
    const r = await runAnswerJudge(deps, ctx, c, { prediction: t.stages.answer, groundTruth: groundTruthText(gold) });
    t.answerCorrect = r.answer_correct === 1 ? 1 : 0;
    t.answerReason = r.answer_reasoning;
  } catch (err) {
    rethrowIfAborted(err, ctx.signal);
    t.answerCorrect = -1;
    t.answerReason = `answer judge failed: ${describeError(err).code}`;
  }
  t.answerBy = "judge";
}

/** ClinHallu's support context for the K and R judges: reference V/K and candidate V/K, each only when non-empty. */
export function supportContext(reference: StageTrace | null, candidate: StageTrace): string {
  const lines: string[] = [];
  for (const [who, t] of [["Reference", reference], ["Candidate", candidate]] as const)
    for (const s of ["visual", "knowledge"] as const) if (t && t[s].trim() !== "") lines.push(`${who} ${STAGE_NAMES[s]}: ${t[s].trim()}`);
  return lines.length ? lines.join("\n") : "No additional support context provided.";
}

/**
 * Judge the given stages of a trace that are not judged yet (in parallel). ClinHallu's
 * rules: an empty stage is hallucinated without a call; a judge that still fails counts
 * hallucinated ("Judge failed to produce a valid result"); with no reference trace the
 * reference reads "(empty)" (ClinHallu would count every step hallucinated for a sample
 * with no gold record; a stage judged on the case alone says more, and `by` shows it).
 */
export async function judgeStages(
  deps: AgentDeps,
  ctx: CallContext,
  c: PreparedCase,
  input: { gold: GoldAnswer; reference: StageTrace | null; candidate: StageTrace; stages: readonly StageKey[]; judged: StageJudgments; evidence?: string; apiFailed?: boolean },
  /** Called after each verdict (the caller checkpoints it, so a killed run does not pay for it again). */
  onJudged: () => Promise<void> = async () => undefined,
): Promise<void> {
  await Promise.all(
    input.stages
      .filter((s) => input.judged[s] === undefined)
      .map(async (stage) => {
        const text = input.candidate[stage].trim();
        let j: StageJudgment;
        if (text === "") j = { hallucinated: 1, reason: input.apiFailed ? `no ${STAGE_HEADERS[stage]} step: the trace's generation call failed (api_failed)` : `empty ${STAGE_HEADERS[stage]} step`, by: "empty" };
        else {
          try {
            const r = await runStageJudge(deps, ctx, c, {
              stage,
              candidate: text,
              reference: input.reference?.[stage].trim() || "(empty)",
              support:
                stage === "visual"
                  ? "Not used for the visual step: the image(s) are the evidence."
                  : supportContext(input.reference, input.candidate) + (input.evidence ? `\nThe evidence graph the method built for its answer:\n${input.evidence}` : ""),
              groundTruth: groundTruthText(input.gold),
            });
            j = { hallucinated: r.hallucinated === 1 ? 1 : 0, reason: r.reason, by: "judge" };
          } catch (err) {
            rethrowIfAborted(err, ctx.signal);
            j = { hallucinated: 1, reason: `Judge failed to produce a valid result (${describeError(err).code})`, by: "judge-failed" };
          }
        }
        input.judged[stage] = j;
        await onJudged();
      }),
  );
}
