import { describe, expect, it } from "vitest";
import { Pipeline, pipelineOptions } from "../../../src/core/workflow/pipeline.js";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import { chestPainCase } from "../../support/sample-cases.js";
import { useScriptedServers } from "../../support/scripted-servers-fixture.js";

/**
 * Cached prompt tokens and dollars, end to end: the scripted server simulates a prompt cache
 * and reports `usage.prompt_tokens_details.cached_tokens` as OpenAI does; the case's usage
 * must carry them per agent and in total, and its costUsd must be what the calls cost by
 * hand at the table's input, cached-input and output rates.
 */
const servers = useScriptedServers({ search: true });

const PRICES = {
  "scripted-executor": { input: 2.5, cachedInput: 1.25, output: 10 },
  "scripted-judge": { input: 0.15, cachedInput: 0.075, output: 0.6 },
};

describe("cached prompt tokens and cost", () => {
  it("a case's usage counts the cached tokens the server reported, and its cost is the calls' cost by hand", async () => {
    servers.model.setScenario(clinicalScenario({ rolloutAnswers: ["A", "B", "A"], identicalReasoning: false }));
    // A lower minimum than OpenAI's 1024 tokens: the example case's prompts are shorter.
    servers.model.setPromptCache({ minPromptTokens: 256, blockTokens: 128 });
    try {
      const cfg = servers.config({ MEDMMV_PRICES: JSON.stringify(PRICES) });
      const { result } = await new Pipeline(cfg).run(chestPainCase("case-cost-1"), pipelineOptions(cfg, { k: 3 }));
      expect(result.status).toBe("completed");
      const calls = servers.model.stats().log.filter((l) => l.status === 200);
      expect(calls.length).toBe(result.usage.llmCalls);

      const cached = calls.reduce((n, l) => n + l.cachedTokens, 0);
      expect(cached).toBeGreaterThan(0);
      expect(result.usage.cachedPromptTokens).toBe(cached);
      for (const [agent, u] of Object.entries(result.usage.byAgent)) {
        expect(u.cachedPromptTokens ?? 0, agent).toBe(calls.filter((l) => l.agent === agent).reduce((n, l) => n + l.cachedTokens, 0));
      }

      let byHand = 0;
      for (const l of calls) {
        const p = PRICES[l.model as keyof typeof PRICES];
        byHand += (l.promptTokens - l.cachedTokens) * p.input + l.cachedTokens * p.cachedInput + l.completionTokens * p.output;
      }
      byHand /= 1_000_000;
      expect(byHand).toBeGreaterThan(0);
      expect(result.usage.costUsd).toBeCloseTo(byHand, 6);
      // Without the cached rate every prompt token would cost `input`: the cache saved something.
      const uncached = calls.reduce((n, l) => n + (l.promptTokens * PRICES[l.model as keyof typeof PRICES].input + l.completionTokens * PRICES[l.model as keyof typeof PRICES].output) / 1_000_000, 0);
      expect(result.usage.costUsd).toBeLessThan(uncached);
      const agentCost = Object.values(result.usage.byAgent).reduce((n, u) => n + (u.costUsd ?? 0), 0);
      expect(agentCost).toBeCloseTo(byHand, 6);
    } finally {
      servers.model.setPromptCache(false);
    }
  });

  it("without the server's cache figure there are no cached tokens, and all prompt tokens cost the input rate", async () => {
    servers.model.setScenario(clinicalScenario({}));
    const cfg = servers.config({ MEDMMV_PRICES: JSON.stringify(PRICES) });
    const { result } = await new Pipeline(cfg).run(chestPainCase("case-cost-2"), pipelineOptions(cfg, { k: 1 }));
    expect(result.usage.cachedPromptTokens).toBe(0);
    const calls = servers.model.stats().log.filter((l) => l.status === 200);
    const byHand = calls.reduce((n, l) => n + (l.promptTokens * PRICES[l.model as keyof typeof PRICES].input + l.completionTokens * PRICES[l.model as keyof typeof PRICES].output) / 1_000_000, 0);
    expect(result.usage.costUsd).toBeCloseTo(byHand, 6);
  });
});
