import { describe, expect, it } from "vitest";
import { answerTurn, turnEvidence } from "../../../src/core/conversation/answer-turn.js";
import { Pipeline } from "../../../src/core/workflow/pipeline.js";
import { CallChain, UsageMeter } from "../../../src/core/llm/usage.js";
import { loadPathway } from "../../../src/core/pathways/load-pathway.js";
import type { Pathway } from "../../../src/core/contracts/pathway.js";
import { MedmmvError } from "../../../src/core/contracts/errors.js";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import { useScriptedServers } from "../../support/scripted-servers-fixture.js";
import type { ScriptedRequest } from "../../../src/scripted/scripted-openai-server.js";
import { MARROW_NOTES } from "./turns-scenario.js";

const servers = useScriptedServers();
const CASE = { id: "judge-case", question: "What is the diagnosis?", notes: MARROW_NOTES, images: [] };

/** bone-marrow with the judge fallback on for the diagnosis step only. */
function withJudge(): Pathway {
  const p = structuredClone(loadPathway("bone-marrow"));
  p.steps.at(-1)!.judgeFallback = true;
  return p;
}

function scenario(answer: string, judge: unknown, seen: string[]) {
  const base = clinicalScenario();
  return {
    ...base,
    agents: {
      ...base.agents,
      "turn-answer": { step: "diagnosis", answer, claims: [answer] },
      "pathway-judge": (req: ScriptedRequest) => (seen.push(req.text), judge),
    },
  };
}

async function ask(pathway: Pathway) {
  const p = new Pipeline(servers.config());
  const meter = new UsageMeter();
  return answerTurn(p, { caseKey: CASE.id, meter, chain: new CallChain(meter, 0) }, { case: CASE, pathway, evidence: turnEvidence(null), history: [], request: { question: "What is the diagnosis?", step: "diagnosis" } });
}

describe("LLM-judge fallback for no-match", () => {
  it("off by default: a keyword-less answer stays no-match and the judge is never called", async () => {
    const seen: string[] = [];
    servers.model.setScenario(scenario("A clonal myeloid neoplasm with maturation arrest.", { category: "aml", reason: "x" }, seen));
    const t = await ask(loadPathway("bone-marrow"));
    expect(t.category).toBe("no-match");
    expect(seen).toEqual([]);
  });

  it("on for a step: the judge classifies a no-match answer, constrained to the step's category ids", async () => {
    const seen: string[] = [];
    servers.model.setScenario(scenario("A clonal myeloid neoplasm with maturation arrest.", { category: "aml", reason: "maturation arrest of myeloid blasts" }, seen));
    const t = await ask(withJudge());
    expect(t).toMatchObject({ step: "diagnosis", category: "aml", details: { labelledBy: "judge" } });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toContain("aml: Acute myeloid leukemia");
    expect(seen[0]).toMatch(/<<<MODEL_OUTPUT\nA clonal myeloid neoplasm with maturation arrest\.\nMODEL_OUTPUT>>>/);
    expect(seen[0]).toMatch(/"enum":\["no-match","healthy","aml","mm","inconclusive"\]/);
  });

  it("the keywords decide when they can (no judge call); a judge answer outside the ids is refused after the re-asks", async () => {
    const seen: string[] = [];
    servers.model.setScenario(scenario("Acute myeloid leukemia.", { category: "aml", reason: "x" }, seen));
    expect((await ask(withJudge())).details).toMatchObject({ labelledBy: "keywords", keyword: "acute myeloid leukemia" });
    expect(seen).toEqual([]);

    servers.model.setScenario(scenario("Something unusual.", { category: "lymphoma", reason: "x" }, seen));
    const err = await ask(withJudge()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MedmmvError);
    expect((err as MedmmvError).code).toBe("LLM_BAD_OUTPUT");
    expect(seen).toHaveLength(3); // the call and its two re-asks
  });
});
