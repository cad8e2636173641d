import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { clinicalScenario } from "../../src/scripted/clinical-scenario.js";
import type { Scenario, ScriptedRequest } from "../../src/scripted/scripted-openai-server.js";

export const HEALTHBENCH_DIR = fileURLToPath(new URL("../../examples/healthbench/", import.meta.url));

interface Example {
  prompt_id: string;
  prompt: Array<{ role: string; content: string }>;
  rubrics: Array<{ criterion: string; points: number; tags: string[] }>;
  example_tags: string[];
}

export function readExamples(file: string): Example[] {
  return readFileSync(new URL(file, `file://${HEALTHBENCH_DIR}`), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Example);
}

/** The scripted reply to each example and the scripted grader's verdict on each criterion, in rubric order. */
export const GRADER_SCRIPT = JSON.parse(readFileSync(new URL("scripted-grader.json", `file://${HEALTHBENCH_DIR}`), "utf8")) as Record<string, { reply: string; met: boolean[] }>;

const FILES = ["healthbench-synthetic.jsonl", "healthbench-hard-synthetic.jsonl", "healthbench-consensus-synthetic.jsonl"];

/**
 * The scripted model for HealthBench: the executor replies to each example with its scripted
 * reply (recognised by the last user turn, the case's question), and the rubric grader
 * decides each criterion (recognised by its fenced text) as scripted-grader.json says.
 * `grader` overrides a verdict (or throws, for a grader that never answers).
 */
export function healthbenchScenario(grader?: (promptId: string, criterion: string) => boolean | undefined): Scenario {
  const byQuestion = new Map<string, Example>();
  for (const f of FILES) for (const e of readExamples(f)) byQuestion.set(e.prompt.at(-1)!.content, e);
  const exampleOf = (req: ScriptedRequest): Example => {
    for (const [q, e] of byQuestion) if (req.text.includes(`Question:\n${q}`)) return e;
    throw new Error("no scripted HealthBench example for this request");
  };
  const base = clinicalScenario();
  return {
    ...base,
    agents: {
      ...base.agents,
      cot: (req: ScriptedRequest) => {
        const e = exampleOf(req);
        return { reasoning: "Scripted reasoning.", answer: { option: null, text: GRADER_SCRIPT[e.prompt_id]!.reply } };
      },
      "rubric-grader": (req: ScriptedRequest) => {
        const e = exampleOf(req);
        const criterion = /Rubric criterion \(-?[\d.]+ points\):\n<<<MODEL_OUTPUT\n([\s\S]*?)\nMODEL_OUTPUT>>>/.exec(req.text)?.[1];
        const i = e.rubrics.findIndex((r) => r.criterion === criterion);
        if (i < 0) throw new Error(`criterion not found in ${e.prompt_id}`);
        const met = grader?.(e.prompt_id, criterion!) ?? GRADER_SCRIPT[e.prompt_id]!.met[i]!;
        return { met, explanation: met ? "Scripted: the reply does this." : "Scripted: the reply does not do this." };
      },
    },
  };
}
