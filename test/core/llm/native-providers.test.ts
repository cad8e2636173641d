import { describe, expect, it } from "vitest";
import { useScriptedServers } from "../../support/scripted-servers-fixture.js";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import { scriptedOrigin } from "../../../src/scripted/scripted-vendor-routes.js";
import { chestPainCase } from "../../support/sample-cases.js";
import { Pipeline, pipelineOptions } from "../../../src/core/workflow/pipeline.js";
import { DiagnosisResult } from "../../../src/core/contracts/diagnosis-result.js";

const servers = useScriptedServers();

function nativeEnv(env: Record<string, string>): Record<string, string> {
  const origin = scriptedOrigin(servers.model.baseUrl);
  return { ANTHROPIC_API_KEY: "sk-ant-test", ANTHROPIC_BASE_URL: origin, GOOGLE_API_KEY: "g-test", GOOGLE_GENAI_BASE_URL: origin, ...env };
}

async function runCase(env: Record<string, string>) {
  servers.model.setScenario(clinicalScenario({ rolloutAnswers: ["B"] }));
  const cfg = servers.config(nativeEnv(env));
  const p = new Pipeline(cfg);
  return (await p.run(chestPainCase(), pipelineOptions(cfg, {}))).result;
}

describe("a whole case through LangChain's own Anthropic and Gemini integrations", () => {
  it("anthropic:", async () => {
    const result = await runCase({ MEDMMV_MODEL: "anthropic:claude-sonnet-4-5", MEDMMV_JUDGE_MODEL: "anthropic:claude-sonnet-4-5" });
    console.log(JSON.stringify(result.error ?? result.provenance.failures), result.status, JSON.stringify(result.usage.byAgent.rollout));
    console.log(servers.model.vendors.anthropic.calls().slice(0, 8));
    expect(() => DiagnosisResult.parse(result)).not.toThrow();
    expect(result.status).toBe("completed");
  });
  it("google-genai:", async () => {
    const result = await runCase({ MEDMMV_MODEL: "google-genai:gemini-2.5-flash", MEDMMV_JUDGE_MODEL: "google-genai:gemini-2.5-flash" });
    console.log(JSON.stringify(result.error ?? result.provenance.failures), result.status, JSON.stringify(result.usage.byAgent.rollout));
    console.log(servers.model.vendors.gemini.calls().slice(0, 8));
    expect(result.status).toBe("completed");
  });
});
