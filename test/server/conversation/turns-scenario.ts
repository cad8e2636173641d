import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import type { Scenario, ScriptedRequest } from "../../../src/scripted/scripted-openai-server.js";
import type { PathOutput } from "../../../src/core/contracts/reasoning-path.js";

/** Invented bone-marrow case text (not Dr-LLaVA data). */
export const MARROW_NOTES =
  "Bone-marrow aspirate smear from a 61-year-old with fatigue. The patch is sharp and well stained. Many large cells with fine chromatin and nucleoli are present near the particles.";

/** A consistent AML walk through the bone-marrow pathway: question → [step, answer]. */
export const AML_ANSWERS: Record<string, [string, string]> = {
  "Is the image of sufficient quality for analysis?": ["image-quality", "Yes, the image quality is sufficient for analysis."],
  "Is the region suitable for cell analysis?": ["cell-quality", "The region is adequate: close to the particles and well spread."],
  "Are there abnormalities in the cells?": ["abnormality", "Yes, the cells show a malignancy."],
  "Which cell type is proliferating?": ["proliferation", "Myeloblasts are proliferating (about 40 % of cells)."],
  "What is the diagnosis?": ["diagnosis", "Acute myeloid leukemia."],
  // Contradicts the first answer.
  "Looking again, is the image quality acceptable?": ["image-quality", "No, the image is not suitable; the quality is low."],
};

/** [turn, step, category, contextConflict] the AML_ANSWERS walk is labelled with, in order. */
export const AML_LABELS: Array<[number, string, string, boolean]> = [
      [1, "image-quality", "high", false],
      [2, "cell-quality", "adequate", false],
      [3, "abnormality", "abnormal", false],
      [4, "proliferation", "blasts", false],
      [5, "diagnosis", "aml", false],
      [6, "image-quality", "low", true],
];

export const AML_PATH: PathOutput = {
  steps: [
    { text: "The image quality is sufficient and the region is adequate.", stage: "visual", claims: ["Image quality is sufficient"] },
    { text: "Myeloblasts dominate, a malignancy.", stage: "reasoning", claims: ["Myeloblasts are increased"] },
  ],
  answer: { option: null, text: "Acute myeloid leukemia" },
  summary: "Acute myeloid leukemia.",
};

export function questionOf(req: ScriptedRequest): string {
  return /<<<QUESTION\n([\s\S]*?)\nQUESTION>>>/.exec(req.text)?.[1] ?? "";
}

/** The scripted clinician plus a turn-answer script that answers from AML_ANSWERS. */
export function turnsScenario(answers: Record<string, [string, string]> = AML_ANSWERS): Scenario {
  const base = clinicalScenario();
  return {
    ...base,
    agents: {
      ...base.agents,
      rollout: () => AML_PATH,
      "turn-answer": (req: ScriptedRequest) => {
        const hit = answers[questionOf(req)];
        if (!hit) return { step: null, answer: "I cannot tell from the evidence.", claims: ["The evidence does not say"] };
        return { step: hit[0], answer: hit[1], claims: [hit[1]] };
      },
    },
  };
}
