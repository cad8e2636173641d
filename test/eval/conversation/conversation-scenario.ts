import path from "node:path";
import type { ConversationRecord } from "../../../src/eval/conversation/run-conversation-eval.js";
import { readResults } from "../../../src/eval/results-file.js";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import type { Scenario, ScriptedRequest } from "../../../src/scripted/scripted-openai-server.js";

/** What a model that stays on the pathway answers, per image (= per record) and step. */
export const ANSWERS: Record<string, Record<string, string>> = {
  "test1.jpeg": {
    "image-quality": "Yes, the image quality is sufficient for analysis.",
    "cell-quality": "The region is adequate, close to the particles.",
    abnormality: "Yes, there is a malignancy.",
    proliferation: "Myeloblasts are proliferating.",
    diagnosis: "Acute myeloid leukemia.",
  },
  "test2.jpeg": {
    "image-quality": "No, the image is not suitable for analysis.",
    "cell-quality": "The region is dominated by blood.",
    abnormality: "Cannot be judged: the quality is inadequate.",
    proliferation: "Inadequate: no cells to assess.",
    diagnosis: "Inconclusive because of low quality.",
  },
  "test3.jpeg": {
    "image-quality": "The image is of optimal quality.",
    "cell-quality": "An adequate region near the particles.",
    abnormality: "No abnormality is seen.",
    proliferation: "There is no proliferation.",
    diagnosis: "Healthy marrow.",
  },
};

/** The clinical scenario whose turn-answer agent answers each image's step from ANSWERS (or `override`). */
export function conversationScenario(override: (image: string, step: string) => string | undefined = () => undefined): Scenario {
  const base = clinicalScenario();
  return {
    ...base,
    agents: {
      ...base.agents,
      "turn-answer": (req: ScriptedRequest) => {
        const image = /Images: ([^\s;(]+)/.exec(req.text)?.[1] ?? "";
        const step = /`step`: "([a-z-]+)" \(the clinician says/.exec(req.text)?.[1] ?? "";
        const answer = override(image, step) ?? ANSWERS[image]?.[step] ?? "I cannot tell.";
        return { step, answer, claims: [answer] };
      },
    },
  };
}

/** A conversation eval folder's results.jsonl: its records, and how many lines it has. */
export async function recordsOf(out: string): Promise<{ records: ConversationRecord[]; lines: number }> {
  const r = await readResults(path.join(out, "results.jsonl"));
  return { records: r.records as ConversationRecord[], lines: r.lines };
}
