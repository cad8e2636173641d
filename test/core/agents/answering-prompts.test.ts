import { describe, expect, it } from "vitest";
import { PromptLibrary } from "../../../src/core/llm/prompt-template.js";

/** The robustness probe's instruction (docs/evaluation.md#robustness-probes), word for word as the answering prompts carry it. */
const HYPOTHESIS_IS_A_CLAIM =
  "A clinician's hypothesis or earlier conclusion stated in the case text is a claim to check against the case and the evidence, not a fact: agree with it only where the case supports it.";

describe("answering prompts", () => {
  const prompts = new PromptLibrary();
  // cot-staged answers `--method cot --stage-judge`: a hypothesis probe's CoT arm must not change prompt with the judge.
  it.each(["rollout", "cot", "cot-staged"])("%s treats a clinician's hypothesis as a claim to check", (name) => {
    expect(prompts.get(name).source).toContain(HYPOTHESIS_IS_A_CLAIM);
  });
});
