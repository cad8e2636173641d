import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { startScriptedOpenAI, type ScriptedOpenAI } from "../../src/scripted/scripted-openai-server.js";
import { clinicalScenario } from "../../src/scripted/clinical-scenario.js";
import { useTempDir } from "../eval/datasets/dataset-kit.js";
import { medmmvCli } from "../support/medmmv-cli.js";

/** The CLI against the scripted server playing Azure's content filter and vLLM's image limit. */
const tmp = useTempDir("medmmv-cli-providers-");
let model: ScriptedOpenAI;
beforeAll(async () => {
  model = await startScriptedOpenAI({ scenario: { ...clinicalScenario({ rolloutAnswers: ["B"] }), agents: { ...clinicalScenario({ rolloutAnswers: ["B"] }).agents, "models-check": { ok: true } } } });
});
afterAll(() => model.close());

describe("the CLI and the provider's rules", () => {
  it("diagnose on Azure with an overdose case: CONTENT_FILTERED with self_harm in the summary, and Azure's own reason on stderr", async () => {
    model.setProvider("azure");
    const file = path.join(tmp(), "overdose.json");
    await writeFile(
      file,
      JSON.stringify({
        id: "overdose-1",
        question: "What is the next step?",
        notes: "A 24-year-old woman reports an intentional overdose of acetaminophen 6 hours ago. The 4-hour paracetamol level was 180 mg/L.",
        options: { A: "Acetylcysteine", B: "Observation", C: "Activated charcoal only" },
      }),
    );
    const r = await medmmvCli(["diagnose", file, "--k", "2"], { AZURE_OPENAI_API_KEY: "az-key", AZURE_OPENAI_ENDPOINT: model.baseUrl.replace(/\/v1$/, ""), MEDMMV_MODEL: "gpt-4o" });
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/\[CONTENT_FILTERED\] .*self_harm: medium/);
    expect(r.stderr).toContain("content management policy");
  });

  it("models check --json against vLLM reports one image per request", async () => {
    model.setProvider("vllm");
    const r = await medmmvCli(["models", "check", "--json"], { OPENAI_BASE_URL: model.baseUrl, MEDMMV_MODEL: "Qwen2.5-VL-7B-Instruct" });
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(out).toMatchObject({ model: "Qwen2.5-VL-7B-Instruct", temperature: true, structuredOutput: { jsonSchema: true, functionCalling: true, jsonMode: true }, imagesPerRequest: 1, reasoning: false });
  });

  it("models check on an anthropic: model probes it through its integration and says what applies", async () => {
    model.setProvider("openai");
    const r = await medmmvCli(["models", "check"], { ANTHROPIC_API_KEY: "sk-ant-cli", ANTHROPIC_BASE_URL: model.baseUrl.replace(/\/v1$/, ""), MEDMMV_MODEL: "anthropic:claude-sonnet-4-5" });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("anthropic:claude-sonnet-4-5 (through LangChain's anthropic integration, 6 requests)");
    expect(r.stdout).toMatch(/structured output +jsonSchema n\/a, functionCalling yes, jsonMode n\/a/);
    expect(r.stdout).toMatch(/images per request +2 or more/);
    expect(r.stdout).toContain("none: the defaults work");
    // The output budget and reasoning are the integration's own: not shown as unknown.
    expect(r.stdout).not.toMatch(/output budget parameter/);
  });
});
