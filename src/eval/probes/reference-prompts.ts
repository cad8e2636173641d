import { PromptLibrary } from "../../core/llm/prompt-template.js";

/**
 * `--hypothesis-warning off` (docs/evaluation.md#robustness-probes): the prompts as shipped,
 * less the sentence that tells the model a clinician's hypothesis or earlier conclusion in
 * the case text is "a claim to check". Ours keeps it (the default: a model should not take
 * a colleague's guess as a finding); Dr-LLaVA's probes were run without any such warning,
 * so only this variant gives figures comparable with its Table C.4. The sentence is found
 * by its opening words in whichever template and line it sits, so reordering a template
 * does not lose it; the variant's templates have their own hashes in provenance.
 */
export const HYPOTHESIS_WARNING_OPENING = "A clinician's hypothesis or earlier conclusion stated in the case text is a claim to check";

/** The template without the warning's line (and the blank line it leaves doubled). */
export function withoutHypothesisWarning(source: string): string {
  return source
    .split("\n")
    .filter((line) => !line.trimStart().startsWith(HYPOTHESIS_WARNING_OPENING))
    .join("\n")
    .replace(/\n{3,}/g, "\n\n");
}

export function referencePromptLibrary(dir?: string): PromptLibrary {
  return new PromptLibrary(dir, (_name, source) => withoutHypothesisWarning(source));
}
