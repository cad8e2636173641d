import { describe, expect, it } from "vitest";
import { useScriptedServers } from "../../support/scripted-servers-fixture.js";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import type { ScriptedRequest } from "../../../src/scripted/scripted-openai-server.js";
import { Pipeline, pipelineOptions } from "../../../src/core/workflow/pipeline.js";
import { prepareCase } from "../../../src/core/intake/case-intake.js";
import { ClinicalCase } from "../../../src/core/contracts/clinical-case.js";
import { MedmmvError } from "../../../src/core/contracts/errors.js";
import { loadPathway } from "../../../src/core/pathways/load-pathway.js";
import { checkConsistency } from "../../../src/core/pathways/consistency.js";
import { labelPath } from "../../../src/core/pathways/path-conflict.js";
import type { PathOutput } from "../../../src/core/contracts/reasoning-path.js";

const servers = useScriptedServers();
const LIMITS = { maxBytes: 5 * 1024 * 1024, maxPixels: 40_000_000, allowPath: false };

/** Invented case text (not from Dr-LLaVA's data). */
const MARROW_CASE = {
  question: "Bone-marrow aspirate patch: what is the diagnosis?",
  notes: "Bone-marrow aspirate smear from a 61-year-old. The patch is blurred and dominated by red blood cells.",
  pathway: "bone-marrow",
};

/** The rollout that jumps from low image quality straight to AML. */
const JUMP: PathOutput = {
  steps: [
    { text: "The image quality is low: the patch is blurred.", stage: "visual", claims: ["Image quality is low"] },
    { text: "Blasts seem to dominate, so this is leukaemia.", stage: "reasoning", claims: ["The picture suggests leukaemia"] },
  ],
  answer: { option: null, text: "Acute myeloid leukemia" },
  summary: "Acute myeloid leukemia.",
};

/** What a repair that follows the pathway writes. */
const ON_PATH: PathOutput = {
  steps: [
    { text: "The image quality is low: the patch is blurred.", stage: "visual", claims: ["Image quality is low"] },
    { text: "The region is dominated by blood, so cells cannot be assessed; the quality is inadequate.", stage: "reasoning", claims: ["The region is mostly blood"] },
  ],
  answer: { option: null, text: "Inconclusive: the sample is of low quality" },
  summary: "Inconclusive because the region is blood-contaminated.",
};

function scenario(repairPrompts: string[]) {
  const base = clinicalScenario();
  return {
    ...base,
    agents: {
      ...base.agents,
      rollout: () => JUMP,
      "auto-repair": (req: ScriptedRequest) => {
        repairPrompts.push(req.text);
        return ON_PATH;
      },
    },
  };
}

describe("context-conflict: a refined path must stay on the case's pathway", () => {
  it("the scripted jump from low image quality to AML is flagged, repaired, and ends on a valid path", async () => {
    const repairPrompts: string[] = [];
    servers.model.setScenario(scenario(repairPrompts));
    const cfg = servers.config();
    const c = await prepareCase(ClinicalCase.parse(MARROW_CASE), LIMITS);
    expect(c.pathway).toBe("bone-marrow");
    const { result } = await new Pipeline(cfg).run(c, pipelineOptions(cfg, { k: 2 }));

    expect(result.status).toBe("completed");
    const cand = result.candidates[0]!;
    const first = cand.hdReports[0]!;
    expect(first.hallucinationDetected).toBe(true);
    expect(first.severity).toBe("HIGH");
    // "low" (inadequate) and "blasts" / "leukaemia" (abnormal, blasts) name two categories of the
    // middle steps, so those are ambiguous and left unlabelled; the jump itself is the conflict.
    expect(first.contextConflict).toMatchObject({ pathway: "bone-marrow", steps: ["image-quality", "diagnosis"], closestPath: "aml" });
    expect(first.contextConflict!.labels).toMatchObject({ "image-quality": "low", diagnosis: "aml" });
    expect(first.issues.at(-1)).toMatch(/^context-conflict: image-quality = low, diagnosis = aml fit no valid path of pathway "bone-marrow"/);

    // AutoRepair received it like any other issue.
    expect(cand.repairs).toBe(1);
    expect(repairPrompts[0]).toContain("issue: context-conflict: image-quality = low");
    expect(repairPrompts[0]).toContain('instruction: Make every step and the answer agree with one valid path of the "bone-marrow" pathway');

    // The repaired path is checked again and is on a valid path.
    const last = cand.hdReports.at(-1)!;
    expect(last.hallucinationDetected).toBe(false);
    expect(last.contextConflict).toBeUndefined();
    expect(result.answer?.text).toBe(ON_PATH.answer.text);
    expect(checkConsistency(loadPathway("bone-marrow"), labelPath(loadPathway("bone-marrow"), ON_PATH))).toMatchObject({ consistent: true, matchingPaths: ["blood"] });

    const cc = result.hallucinations.filter((h) => h.issue.startsWith("context-conflict"));
    expect(cc).toEqual([
      {
        pathId: cand.pathId,
        attempt: 1,
        stage: "reasoning",
        severity: "HIGH",
        claim: "image-quality = low, diagnosis = aml",
        issue: first.issues.at(-1),
        resolved: true,
      },
    ]);
    expect(servers.model.stats().byAgent["auto-repair"]).toBe(1);
    // Every agent saw the pathway in the case block; the result says which pathway it was held to.
    expect(repairPrompts[0]).toMatch(/Clinical pathway "Bone-marrow aspirate review[^"]*": the reasoning must follow one of its valid paths\.\nSteps:\n- image-quality: /);
    expect(repairPrompts[0]).toContain("- blood (Blood-contaminated region: inconclusive): image-quality = low, cell-quality = blood");
    expect(result.provenance.config["pathway"]).toBe("bone-marrow");
  });

  it("a case without a pathway is not checked; a path on the pathway is not flagged", async () => {
    const repairPrompts: string[] = [];
    servers.model.setScenario({ ...scenario(repairPrompts), agents: { ...scenario(repairPrompts).agents, rollout: () => ON_PATH } });
    const cfg = servers.config();
    const onPath = await new Pipeline(cfg).run(await prepareCase(ClinicalCase.parse(MARROW_CASE), LIMITS), pipelineOptions(cfg, { k: 1 }));
    expect(onPath.result.candidates[0]!.hdReports).toHaveLength(1);
    expect(onPath.result.candidates[0]!.hdReports[0]!.hallucinationDetected).toBe(false);

    servers.model.setScenario(scenario(repairPrompts));
    const { pathway: _p, ...noPathway } = MARROW_CASE;
    const plain = await new Pipeline(cfg).run(await prepareCase(ClinicalCase.parse(noPathway), LIMITS), pipelineOptions(cfg, { k: 1 }));
    expect(plain.result.candidates[0]!.repairs).toBe(0);
    expect(plain.result.hallucinations).toEqual([]);
    expect(repairPrompts).toEqual([]);
  });

  it("an unknown pathway id or a malformed pathway object is a 400-class error before any model call", async () => {
    const unknown = await prepareCase(ClinicalCase.parse({ ...MARROW_CASE, pathway: "lung" }), LIMITS).catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(MedmmvError);
    expect((unknown as MedmmvError).code).toBe("INVALID_INPUT");
    expect((unknown as MedmmvError).message).toMatch(/unknown pathway "lung"/);
    const bad = { ...loadPathway("bone-marrow"), paths: [{ id: "x", outcome: "x", sequence: { diagnosis: "flu" } }] };
    const parsed = ClinicalCase.safeParse({ ...MARROW_CASE, pathway: bad });
    expect(parsed.success).toBe(false);
    expect(JSON.stringify(parsed.error?.issues)).toContain('gives step \\"diagnosis\\" the category \\"flu\\"');
    expect(servers.model.stats().total).toBe(0);
  });
});
