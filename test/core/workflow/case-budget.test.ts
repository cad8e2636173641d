import { describe, expect, it } from "vitest";
import { Pipeline, pipelineOptions } from "../../../src/core/workflow/pipeline.js";
import { MedmmvError } from "../../../src/core/contracts/errors.js";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import { chestPainCase } from "../../support/sample-cases.js";
import { useScriptedServers } from "../../support/scripted-servers-fixture.js";

/**
 * The per-case budget: once the case has spent it (tokens, or dollars at the configured
 * prices), its remaining repairs are skipped, selection runs on the paths as they are, and
 * the result says so in `budgetExhausted`.
 */
const servers = useScriptedServers();

// Every path is flagged by the detector three times: without a budget, three repairs each.
const scenario = () => clinicalScenario({ rolloutAnswers: ["B", "B"], identicalReasoning: false, repairsNeeded: { B: 3 } });
const repairs = () => servers.model.stats().log.filter((l) => l.agent === "auto-repair").length;

describe("per-case budget", () => {
  it("without a budget every flagged path is repaired up to maxRepairs", async () => {
    servers.model.setScenario(scenario());
    const cfg = servers.config();
    const { result } = await new Pipeline(cfg).run(chestPainCase("case-budget-none"), pipelineOptions(cfg, { k: 2, maxRepairs: 3 }));
    expect(repairs()).toBe(6);
    expect(result.budgetExhausted).toBeUndefined();
  });

  it("a token budget reached before refinement skips every repair and says so; selection still answers", async () => {
    servers.model.setScenario(scenario());
    const cfg = servers.config();
    const { result } = await new Pipeline(cfg).run(chestPainCase("case-budget-tokens"), pipelineOptions(cfg, { k: 2, maxRepairs: 3, budget: { maxTokens: 1, maxCostUsd: null } }));
    expect(repairs()).toBe(0);
    expect(result.status).not.toBe("failed");
    expect(result.path).not.toBeNull();
    expect(result.budgetExhausted).toEqual({ maxTokens: 1, maxCostUsd: null, pathsWithRepairsSkipped: expect.arrayContaining([expect.any(String)]) });
    expect(result.budgetExhausted!.pathsWithRepairsSkipped).toHaveLength(2);
    expect(result.provenance.config.budget).toEqual({ maxTokens: 1, maxCostUsd: null });
  });

  it("a budget reached during refinement stops the repairs there, counting all branches", async () => {
    servers.model.setScenario(scenario());
    const cfg = servers.config();
    const first = await new Pipeline(cfg).run(chestPainCase("case-budget-free"), pipelineOptions(cfg, { k: 2, maxRepairs: 3 }));
    const full = first.result.usage.promptTokens + first.result.usage.completionTokens;
    const before = Object.entries(first.result.usage.byAgent)
      .filter(([a]) => !["hd-supervisor", "auto-repair", "coherence-judge"].includes(a))
      .reduce((n, [, u]) => n + (u.promptTokens ?? 0) + (u.completionTokens ?? 0), 0);
    servers.model.reset();
    // Room for about half of the refinement.
    const maxTokens = Math.round(before + (full - before) / 2);
    const { result } = await new Pipeline(cfg).run(chestPainCase("case-budget-half"), pipelineOptions(cfg, { k: 2, maxRepairs: 3, budget: { maxTokens, maxCostUsd: null } }));
    expect(repairs()).toBeGreaterThan(0);
    expect(repairs()).toBeLessThan(6);
    expect(result.budgetExhausted?.maxTokens).toBe(maxTokens);
    // The budget is checked before each repair: what ran after it is at most one repair,
    // its re-check and the coherence judgement per path.
    expect(result.usage.promptTokens + result.usage.completionTokens).toBeLessThan(full);
  });

  it("a cost budget needs prices for the models, else INVALID_INPUT", () => {
    const cfg = servers.config();
    expect(() => pipelineOptions(cfg, { budget: { maxTokens: null, maxCostUsd: 0.01 } })).toThrow(MedmmvError);
    const priced = servers.config({ MEDMMV_PRICES: JSON.stringify({ "scripted-executor": { input: 1, output: 1 }, "scripted-judge": { input: 1, output: 1 } }) });
    expect(pipelineOptions(priced, { budget: { maxTokens: null, maxCostUsd: 0.01 } }).budget).toEqual({ maxTokens: null, maxCostUsd: 0.01 });
  });

  it("the server default applies when a request names no budget", () => {
    const cfg = servers.config({ MEDMMV_CASE_MAX_TOKENS: "1234" });
    expect(pipelineOptions(cfg).budget).toEqual({ maxTokens: 1234, maxCostUsd: null });
  });
});
