import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import type { ScriptFn } from "../../../src/scripted/scripted-openai-server.js";

/** The clinical scenario with every image-doctor call's prompt text and image URLs noted in `calls`. */
export function recordingImageDoctor(calls: Array<{ text: string; images: string[] }>): ReturnType<typeof clinicalScenario> {
  const base = clinicalScenario({ rolloutAnswers: ["B", "B", "B"] });
  const fn = base.agents["image-doctor"] as ScriptFn;
  const record = (req: Parameters<ScriptFn>[0]) => {
    calls.push({ text: req.text, images: req.images });
    return fn(req);
  };
  return { ...base, agents: { ...base.agents, "image-doctor": record } };
}
