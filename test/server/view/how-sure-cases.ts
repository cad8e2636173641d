import type { DiagnosisResult } from "../../../src/core/contracts/diagnosis-result.js";
import { syntheticCase, type ScriptedCaseRun } from "./view-fixtures.js";

/** Every claim of the path supported, four of five runs on the answer, the image read: nothing to doubt. */
export function confidentCase(): ScriptedCaseRun {
  const run = syntheticCase(12);
  const r = run.result;
  r.caseId = "case-confident";
  for (const s of r.path!.steps) for (const c of s.claims) c.verdict = "supported";
  r.stability = { rolloutAnswers: ["A", "A", "A", "A", "B"], distribution: { A: 0.8, B: 0.2 }, rgm: 0.2, entropy: 0.72 };
  r.answerSupport = 0.85;
  return run;
}

/** Five runs, five answers, and a claim of the selected path no evidence supports. */
export function uncertainCase(): ScriptedCaseRun {
  const run = syntheticCase(12);
  const r = run.result;
  r.caseId = "case-uncertain";
  r.stability = { rolloutAnswers: ["A", "B", "C", "D", "E"], distribution: { A: 0.2, B: 0.2, C: 0.2, D: 0.2, E: 0.2 }, rgm: 1, entropy: 2.32 };
  r.answerSupport = 0.26;
  return run;
}

/** ImageDoctor stopped by the provider's content filter: the image was never read. */
export function incompleteCase(): ScriptedCaseRun {
  const run = confidentCase();
  const r: DiagnosisResult = run.result;
  r.caseId = "case-incomplete";
  r.provenance.failures = [{ branch: "image-doctor", code: "CONTENT_FILTERED", message: "The response was filtered due to the prompt triggering Azure OpenAI's content management policy." }];
  return run;
}

/** A text-only executor whose rollouts saw the vision model's description of the image: read, by another model; said at the top. */
export function describedImageCase(): ScriptedCaseRun {
  const run = confidentCase();
  run.result.caseId = "case-described";
  run.result.provenance.imageInput = {
    describedBy: "gpt-4o",
    models: [
      { role: "executor", model: "deepseek-chat", saw: "description", note: "the model takes no images: its calls carried, in their place, the findings the vision model gpt-4o described in them" },
      { role: "vision", model: "gpt-4o", saw: "images", note: "ImageDoctor read the images" },
    ],
  };
  return run;
}

/** No model of the deployment takes images: ImageDoctor did not run, and the rollouts went without the image. */
export function unseenImageCase(): ScriptedCaseRun {
  const run = confidentCase();
  run.result.caseId = "case-unseen";
  run.result.provenance.imageInput = {
    describedBy: null,
    models: [
      { role: "executor", model: "deepseek-chat", saw: "nothing", note: "the model takes no images, and no model of this deployment does" },
      { role: "vision", model: "deepseek-chat", saw: "nothing", note: "the model takes no images: ImageDoctor did not run" },
    ],
  };
  return run;
}
