import type { ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clinicalScenario } from "../../src/scripted/clinical-scenario.js";
import { medmmvCli } from "../support/medmmv-cli.js";
import { startScriptedOpenAI, type ScriptedOpenAI } from "../../src/scripted/scripted-openai-server.js";
import { until } from "../support/until.js";

const CASE = fileURLToPath(new URL("../../examples/chest-pain.json", import.meta.url));

let model: ScriptedOpenAI;
beforeAll(async () => {
  model = await startScriptedOpenAI({ scenario: clinicalScenario({ rolloutAnswers: ["B"] }) });
});
afterAll(() => model.close());

describe("medmmv diagnose interrupted", () => {
  it("Ctrl-C while a model call is in flight: the call is dropped and the command exits 130, as every command does", async () => {
    // Every call hangs: the case can only end by the interrupt.
    model.addFault({ kind: "hang" });
    let child: ChildProcess | undefined;
    const run = medmmvCli(["diagnose", CASE], { OPENAI_BASE_URL: model.baseUrl, OPENAI_API_KEY: "k", MEDMMV_MODEL: "scripted", MEDMMV_SEARCH: "none" }, "", (c) => (child = c));
    await until(() => (model.stats().inFlight > 0 ? true : undefined), 30_000, "a model call at the server");
    child!.kill("SIGINT");
    const r = await run;
    expect(r.signal).toBeNull();
    expect(r.code).toBe(130);
    expect(r.stderr).toMatch(/\[ABORTED\]/);
    await until(() => (model.stats().inFlight === 0 ? true : undefined), 10_000, "the hung calls dropped");
  });
});
