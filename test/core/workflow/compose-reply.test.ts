import { describe, expect, it } from "vitest";
import { Pipeline, pipelineOptions } from "../../../src/core/workflow/pipeline.js";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import { chestPainCase } from "../../support/sample-cases.js";
import { useScriptedServers } from "../../support/scripted-servers-fixture.js";

/** The verified reply of an open-ended question (nodes/compose-reply.ts). */
const servers = useScriptedServers();
const BAD = "Aspirin is contraindicated in every myocardial infarction";

function openCase(id: string) {
  const { options: _options, ...rest } = chestPainCase(id);
  return rest;
}

describe("the composed reply", () => {
  it("keeps the statements the detector supports, leaves out the one it rejects, and costs two links after selection", async () => {
    servers.model.setScenario(clinicalScenario({ rolloutAnswers: ["Inferior STEMI"], extraReplyStatements: [{ text: `${BAD}.`, kind: "knowledge" }], unsupportedClaims: [BAD] }));
    const cfg = servers.config();
    const plain = await new Pipeline(cfg).run(openCase("case-reply-off"), pipelineOptions(cfg, { k: 3 }));
    expect(plain.result.reply).toBeUndefined();
    servers.model.reset();
    const { result } = await new Pipeline(cfg).run(openCase("case-reply"), pipelineOptions(cfg, { k: 3, composeReply: true }));
    const reply = result.reply!;
    expect(reply.removedClaims).toBe(1);
    expect(reply.claims).toEqual([
      { text: "The most likely answer is Inferior STEMI.", verdict: "supported" },
      { text: expect.stringMatching(/^The case reports /), verdict: "supported" },
      { text: `${BAD}.`, verdict: "unsupported" },
    ]);
    expect(reply.text).toMatch(/^The most likely answer is Inferior STEMI\. The case reports .*Other answers came up/);
    expect(reply.text).not.toContain(BAD);
    expect(result.usage.byAgent["reply-composer"]!.calls).toBe(1);
    expect(result.usage.llmCalls).toBe(servers.model.stats().total);
    expect(result.usage.criticalPathCalls).toBe(plain.result.usage.criticalPathCalls! + 2);
    expect(result.provenance.prompts["reply-composer"]).toMatch(/^sha256:/);
    expect(result.provenance.config).toMatchObject({ composeReply: true });
  });

  it("is not composed for a multiple-choice question, and a failing composer leaves the result without one, said in provenance", async () => {
    servers.model.setScenario(clinicalScenario({ rolloutAnswers: ["B"] }));
    const cfg = servers.config();
    const mc = await new Pipeline(cfg).run(chestPainCase("case-reply-mc"), pipelineOptions(cfg, { k: 2, composeReply: true }));
    expect(mc.result.reply).toBeUndefined();
    expect(servers.model.stats().byAgent["reply-composer"]).toBeUndefined();

    servers.model.setScenario(clinicalScenario({ rolloutAnswers: ["Inferior STEMI"] }));
    servers.model.addFault({ kind: "status", status: 400, agent: "reply-composer" });
    const { result } = await new Pipeline(cfg).run(openCase("case-reply-fails"), pipelineOptions(cfg, { k: 2, composeReply: true }));
    expect(result.status).toBe("completed");
    expect(result.reply).toBeUndefined();
    expect(result.provenance.failures).toContainEqual(expect.objectContaining({ branch: "compose-reply" }));
  });
});
