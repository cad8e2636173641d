/**
 * The bone-marrow demo script against the bone-marrow pathway, by the product's own
 * labeller: the paths meant to walk the pathway land on its AML path, the jumping rollout
 * is a context conflict and its repair is not, and the scripted conversation stays on one
 * valid path. A rewording of the script that changes a label fails here, not in the demo.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { PathOutput } from "../../../src/core/contracts/reasoning-path.js";
import { checkAnswerSequence } from "../../../src/core/pathways/consistency.js";
import { labelAnswer } from "../../../src/core/pathways/labeller.js";
import { loadPathway } from "../../../src/core/pathways/load-pathway.js";
import { findContextConflict, labelPath } from "../../../src/core/pathways/path-conflict.js";
import type { ScriptedRequest } from "../../../src/scripted/scripted-openai-server.js";
import { caseAgents, type ScriptedPath } from "../../../src/scripted/scenarios/case-script.js";
import { boneMarrowScript } from "../../../src/scripted/scenarios/bone-marrow.js";

const pathway = loadPathway("bone-marrow");
const example = JSON.parse(readFileSync(new URL("../../../examples/bone-marrow.json", import.meta.url), "utf8")) as { options: Record<string, string> };
const asOutput = (p: ScriptedPath): PathOutput => ({
  steps: p.steps.map((s) => ({ text: s.text, stage: s.stage, claims: s.claims.map((c) => c.text) })),
  answer: { option: p.answer, text: example.options[p.answer]! },
  summary: p.summary,
});
const path = (key: string) => asOutput(boneMarrowScript.paths[key]!);
const AML = { "image-quality": "high", "cell-quality": "adequate", abnormality: "abnormal", proliferation: "blasts", diagnosis: "aml" };

describe("bone-marrow demo script on the bone-marrow pathway", () => {
  it("the walking rollout and the repaired one label as the AML path, step by step", () => {
    expect(labelPath(pathway, path("walk"))).toEqual(AML);
    expect(labelPath(pathway, path("jumpRepaired"))).toEqual(AML);
    for (const key of ["walk", "counts", "jumpRepaired"]) expect(findContextConflict(pathway, path(key)), key).toBeNull();
  });

  it("the rollout that jumps from low image quality to leukaemia is a context conflict", () => {
    const conflict = findContextConflict(pathway, path("jump"))!;
    expect(conflict.labels).toMatchObject({ "image-quality": "low", diagnosis: "aml" });
    expect(conflict.steps).toEqual(expect.arrayContaining(["image-quality", "diagnosis"]));
    expect(conflict.issue).toMatch(/^context-conflict: .*fit no valid path of pathway "bone-marrow"/);
  });

  it("auto-repair turns the jumping path into the repaired one", () => {
    const repair = caseAgents(boneMarrowScript)["auto-repair"] as (req: ScriptedRequest) => PathOutput;
    // The path under repair as the prompt renders it: its steps and their numbered claims.
    const rendered = boneMarrowScript.paths.jump!.steps
      .map((s, i) => [`Step ${i + 1} [${s.stage}] ${s.text}`, ...s.claims.map((c, j) => `  - claimId s${i + 1}c${j + 1}: ${c.text}`)].join("\n"))
      .join("\n");
    const out = repair({ text: `medmmv-agent: auto-repair\n<<<MODEL_OUTPUT\n${rendered}\nMODEL_OUTPUT>>>` } as ScriptedRequest);
    expect(out.steps).toEqual(path("jumpRepaired").steps);
  });

  it("the scripted conversation labels each answer at its step and never leaves the pathway", () => {
    const turns = boneMarrowScript.turns!;
    const labelled = turns.map((t) => ({ step: t.step, category: labelAnswer(t.answer, pathway.steps.find((s) => s.id === t.step)!).category }));
    expect(labelled).toEqual([
      { step: "image-quality", category: "high" },
      { step: "cell-quality", category: "adequate" },
      { step: "diagnosis", category: "aml" },
    ]);
    expect(checkAnswerSequence(pathway, labelled).consistent).toBe(true);
  });
});
