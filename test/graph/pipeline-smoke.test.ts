import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startScriptedOpenAI, type ScriptedOpenAI } from "../support/scripted-openai-server.js";
import { clinicalScenario } from "../support/clinical-scenario.js";
import { testConfig } from "../support/test-config.js";
import { chestPainCase } from "../support/sample-cases.js";
import { Pipeline, pipelineOptions } from "../../src/graph/pipeline.js";
import { DiagnosisResult } from "../../src/case/diagnosis-result.js";

let server: ScriptedOpenAI;
beforeAll(async () => {
  server = await startScriptedOpenAI({ scenario: clinicalScenario({ rolloutAnswers: ["B", "B", "A", "B", "C"] }) });
});
afterAll(() => server.close());

describe("pipeline smoke", () => {
  it("runs end to end", async () => {
    const config = testConfig(server.baseUrl);
    const p = new Pipeline(config);
    const { result } = await p.run(chestPainCase(), pipelineOptions(config));
    expect(DiagnosisResult.parse(result)).toBeTruthy();
    console.log(JSON.stringify(result, null, 1).slice(0, 3000), server.stats().byAgent);
    expect(result.status).toBe("completed");
  });
});
