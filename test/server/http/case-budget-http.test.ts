// POST /diagnose ?maxTokens / ?maxCostUsd: the case's budget, over the server's default.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DiagnosisResult } from "../../../src/core/contracts/diagnosis-result.js";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import { chestPain } from "./http-harness.js";
import { startInjectServer, type InjectServer } from "./inject-harness.js";

let t: InjectServer;
beforeAll(async () => {
  // Every path needs two repairs; the server's default budget is generous.
  t = await startInjectServer({ scenario: clinicalScenario({ rolloutAnswers: ["B", "B"], identicalReasoning: false, repairsNeeded: { B: 2 } }), env: { MEDMMV_CASE_MAX_TOKENS: "100000000" } });
});
afterAll(() => t.close());

describe("per-case budget over HTTP", () => {
  it("?maxTokens cuts the repairs short and the result says budgetExhausted", async () => {
    t.openai.reset();
    const res = await t.api("/diagnose?k=2&maxTokens=1", { method: "POST", json: chestPain() });
    expect(res.status).toBe(201);
    const result = DiagnosisResult.parse(await res.json());
    expect(result.budgetExhausted).toMatchObject({ maxTokens: 1, maxCostUsd: null });
    expect(t.openai.stats().byAgent["auto-repair"] ?? 0).toBe(0);
  });

  it("the server's default applies when the request names none (here: never reached)", async () => {
    t.openai.reset();
    const result = DiagnosisResult.parse(await (await t.api("/diagnose?k=2", { method: "POST", json: chestPain() })).json());
    expect(result.budgetExhausted).toBeUndefined();
    expect(result.provenance.config.budget).toEqual({ maxTokens: 100000000, maxCostUsd: null });
    expect(t.openai.stats().byAgent["auto-repair"]).toBeGreaterThan(0);
  });

  it("?maxCostUsd without prices is a 400 that says what to set, and a bad value is a 400", async () => {
    const res = await t.api("/diagnose?maxCostUsd=0.5", { method: "POST", json: chestPain() });
    expect(res.status).toBe(400);
    expect(JSON.stringify(await res.json())).toMatch(/MEDMMV_PRICES/);
    expect((await t.api("/diagnose?maxTokens=-3", { method: "POST", json: chestPain() })).status).toBe(400);
  });
});
