import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Pipeline, pipelineOptions } from "../../../src/core/workflow/pipeline.js";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import { startScriptedTerminology, type ScriptedTerminology } from "../../../src/scripted/scripted-terminology-server.js";
import { chestPainCase } from "../../support/sample-cases.js";
import { useScriptedServers } from "../../support/scripted-servers-fixture.js";

/** Coding the differential against a FHIR terminology server (MEDMMV_TERMINOLOGY_URL): only codes the server returns. */
const servers = useScriptedServers();
let tx: ScriptedTerminology;
beforeAll(async () => {
  tx = await startScriptedTerminology();
});
afterAll(async () => {
  await tx.close();
});

const STEMI = ["Inferior STEMI", "STEMI of the inferior wall"];

function openCase(id: string) {
  const { options: _options, ...rest } = chestPainCase(id);
  return rest;
}

async function run(id: string, env: Record<string, string>, answers = [STEMI[0]!, "Acute pericarditis", STEMI[1]!]) {
  servers.model.setScenario(clinicalScenario({ rolloutAnswers: answers, identicalReasoning: false, synonyms: [STEMI] }));
  const cfg = servers.config(env);
  return (await new Pipeline(cfg).run(openCase(id), pipelineOptions(cfg, { k: 3 }))).result;
}

describe("terminology coding of the differential", () => {
  it("codes each diagnosis with what ValueSet/$expand returns, and a wording the server does not know stays uncoded", async () => {
    const before = tx.requests.length;
    const r = await run("case-tx", { MEDMMV_TERMINOLOGY_URL: tx.baseUrl }, [STEMI[0]!, "Acute pericarditis", STEMI[1]!]);
    expect(r.differential!.map((d) => [d.answer.text, d.code])).toEqual([
      ["Inferior STEMI", { system: "http://snomed.info/sct", code: "73795002", display: "Acute myocardial infarction of inferior wall" }],
      ["Acute pericarditis", { system: "http://snomed.info/sct", code: "15555002", display: "Acute pericarditis" }],
    ]);
    const asked = tx.requests.slice(before).map((q) => new URL(q, "http://x").searchParams);
    expect(asked.map((q) => q.get("filter")).sort()).toEqual(["Acute pericarditis", "Inferior STEMI"]);
    for (const q of asked) expect(q.get("url")).toBe("http://snomed.info/sct?fhir_vs=isa/404684003");
    expect(r.provenance.terminology).toEqual({ valueSet: "http://snomed.info/sct?fhir_vs=isa/404684003", looked: 2, coded: 2 });

    const unknown = await run("case-tx-unknown", { MEDMMV_TERMINOLOGY_URL: tx.baseUrl }, ["Takotsubo syndrome"]);
    expect(unknown.differential![0]!.code).toBeUndefined();
    expect(unknown.provenance.terminology).toMatchObject({ looked: 1, coded: 0 });
  });

  it("a server that is down or does not know the value set codes nothing, says so, and the case completes", async () => {
    tx.setDown(true);
    try {
      const r = await run("case-tx-down", { MEDMMV_TERMINOLOGY_URL: tx.baseUrl });
      expect(r.status).toBe("completed");
      expect(r.differential!.every((d) => d.code === undefined)).toBe(true);
      expect(r.provenance.terminology!.note).toMatch(/2 lookup\(s\) failed \(the terminology server answered 503/);
    } finally {
      tx.setDown(false);
    }
    const other = await run("case-tx-vs", { MEDMMV_TERMINOLOGY_URL: tx.baseUrl, MEDMMV_TERMINOLOGY_VALUESET: "http://example.org/fhir/ValueSet/unknown" });
    expect(other.provenance.terminology!.note).toMatch(/answered 404/);
    // Without a server, nothing is looked up.
    const none = await run("case-tx-none", {});
    expect(none.provenance.terminology).toBeUndefined();
  });
});
