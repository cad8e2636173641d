import { describe, expect, it } from "vitest";
import { Pipeline, pipelineOptions, type PipelineOverrides } from "../../../src/core/workflow/pipeline.js";
import { clinicalScenario, type ClinicalScenarioOptions } from "../../../src/scripted/clinical-scenario.js";
import { formatSummary } from "../../../src/cli/format-summary.js";
import { chestPainCase } from "../../support/sample-cases.js";
import { useScriptedServers } from "../../support/scripted-servers-fixture.js";

/**
 * Open-ended answers compared by meaning (docs/architecture.md#scores), against a scripted
 * model that names one inferior STEMI in four wordings and plays the equivalence judge by
 * its contract (numbered answers in, {"groups": [[…]]} out).
 */
const servers = useScriptedServers({ search: true });

const STEMI = ["Inferior STEMI", "Acute inferior ST-elevation myocardial infarction", "Inferior wall MI", "STEMI of the inferior wall"];
const FIVE = [STEMI[0]!, "Acute pericarditis", STEMI[1]!, STEMI[2]!, STEMI[3]!];
const SEARCH_ON = { maxSearchPairs: 2, k: 5, maxRepairs: 1 } satisfies PipelineOverrides;

function openCase(id: string) {
  const { options: _options, ...rest } = chestPainCase(id);
  return rest;
}

async function run(scenario: ClinicalScenarioOptions, overrides: PipelineOverrides = SEARCH_ON, id = "case-open") {
  servers.model.setScenario(clinicalScenario({ identicalReasoning: false, ...scenario }));
  servers.model.reset();
  const cfg = servers.config();
  const { result } = await new Pipeline(cfg).run(openCase(id), pipelineOptions(cfg, overrides));
  return { result, byAgent: servers.model.stats().byAgent };
}

describe("answers compared by meaning", () => {
  it("five wordings, four of one diagnosis: clusters of 4 and 1, entropy 0.72 bits, STEMI first in the differential, no extra critical-path link", async () => {
    const { result, byAgent } = await run({ rolloutAnswers: FIVE, synonyms: [STEMI] });
    expect(result.status).toBe("completed");
    expect(byAgent["equivalence-judge"]).toBe(1);
    const clusters = result.stability.clusters!;
    expect(clusters.map((c) => [c.canonical, c.rollouts, c.rule])).toEqual([
      ["Inferior STEMI", [0, 2, 3, 4], "judge"],
      ["Acute pericarditis", [1], "identical"],
    ]);
    expect(result.stability.distribution).toEqual({ "acute pericarditis": 0.2, "inferior stemi": 0.8 });
    expect(result.stability.entropy).toBeCloseTo(0.7219, 3);
    // The lexical figures stay beside them: five different strings.
    expect(result.stability.lexical!.entropy).toBeCloseTo(Math.log2(5), 6);
    expect(result.stability.rgm).toBeLessThan(result.stability.lexical!.rgm);
    const [first, second] = result.differential!;
    expect(first).toMatchObject({ rank: 1, answer: { option: null, text: "Inferior STEMI" }, rollouts: 4, of: 5, share: 0.8 });
    expect(first!.wordings).toEqual(STEMI);
    expect(second).toMatchObject({ rank: 2, answer: { text: "Acute pericarditis" }, rollouts: 1, of: 5 });
    expect(first!.bestCu).toBe(result.candidates[first!.candidateIndex!]!.scores!.cu);
    expect(result.candidates.find((c) => c.selected)!.cluster).toBe("inferior stemi");
    expect(result.candidates.filter((c) => c.cluster === "inferior stemi")).toHaveLength(4);
    expect(result.provenance.answerClusters).toMatchObject({ judge: "answered", asked: FIVE, merged: [{ rule: "judge", wordings: STEMI }] });
    expect(result.usage.byAgent["equivalence-judge"]?.calls).toBe(1);
    const summary = formatSummary(result);
    expect(summary).toMatch(/1\. Inferior STEMI {3}4 of 5 runs/);
    expect(summary).toContain("2 answer clusters (4× Inferior STEMI [judge], 1× Acute pericarditis [identical]");

    // The same case in one wording: no judge call, and the same critical path.
    const same = await run({ rolloutAnswers: ["Inferior STEMI"] }, SEARCH_ON, "case-open-same");
    expect(same.byAgent["equivalence-judge"]).toBeUndefined();
    expect(same.result.stability.clusters).toEqual([{ key: "inferior stemi", canonical: "Inferior STEMI", rollouts: [0, 1, 2, 3, 4], rule: "identical", wordings: ["Inferior STEMI"] }]);
    expect(same.result.provenance.answerClusters).toMatchObject({ judge: "not-needed", merged: [] });
    expect(result.usage.criticalPathCalls).toBe(same.result.usage.criticalPathCalls);
  });

  it("the judge runs beside refinement: no extra critical-path link even for a text-only case with search off", async () => {
    const off = { k: 5, maxRepairs: 1, ablations: { noWebSearch: true } } satisfies PipelineOverrides;
    const five = await run({ rolloutAnswers: FIVE, synonyms: [STEMI] }, off, "case-open-off");
    const one = await run({ rolloutAnswers: ["Inferior STEMI"] }, off, "case-open-off-one");
    expect(five.byAgent["equivalence-judge"]).toBe(1);
    expect(five.result.stability.clusters!.map((c) => c.rollouts.length)).toEqual([4, 1]);
    expect(five.result.usage.criticalPathCalls).toBe(one.result.usage.criticalPathCalls);
  });

  it("case, punctuation, articles and listed abbreviations merge without a model call", async () => {
    const { result, byAgent } = await run({ rolloutAnswers: ["Inferior STEMI", "inferior STEMI.", "The inferior ST-elevation myocardial infarction"] }, { ...SEARCH_ON, k: 3 });
    expect(byAgent["equivalence-judge"]).toBeUndefined();
    expect(result.stability.clusters!.map((c) => [c.rollouts, c.rule])).toEqual([[[0, 1, 2], "abbreviation"]]);
    expect(result.stability.entropy).toBe(0);
    expect(result.differential![0]).toMatchObject({ rollouts: 3, of: 3, share: 1 });
  });

  it("a judge that answers out of contract, or not at all, leaves five clusters and says so", async () => {
    for (const judgeReply of [{ groups: [[1, 2, 2], [3]] }, "the answers all look alike to me"]) {
      const { result, byAgent } = await run({ rolloutAnswers: FIVE, synonyms: [STEMI], judgeReply }, SEARCH_ON, `case-open-garbage-${typeof judgeReply}`);
      expect(result.status).toBe("completed");
      expect(byAgent["equivalence-judge"]).toBeGreaterThanOrEqual(1);
      expect(result.stability.clusters).toHaveLength(5);
      expect(result.stability.entropy).toBeCloseTo(Math.log2(5), 6);
      expect(result.provenance.answerClusters!.judge).toBe(typeof judgeReply === "string" ? "failed" : "out-of-contract");
      expect(result.provenance.answerClusters!.note).toMatch(/left unmerged/);
    }
  });

  it("an adaptive run whose first rollouts agree in different wordings settles after the first round", async () => {
    const { result, byAgent } = await run({ rolloutAnswers: [STEMI[0]!, STEMI[2]!, STEMI[3]!, "Acute pericarditis", "Acute pericarditis"], synonyms: [STEMI] }, { ...SEARCH_ON, adaptive: true }, "case-open-adaptive");
    expect(byAgent.rollout).toBe(3);
    // One judge call for the first round, remembered for the final clustering.
    expect(byAgent["equivalence-judge"]).toBe(1);
    expect(result.stability.clusters!.map((c) => c.rollouts)).toEqual([[0, 1, 2]]);
    expect(result.candidates.map((c) => c.multiplicity)).toEqual([3]);
    expect(result.provenance.config).toMatchObject({ rolloutsSampled: 3 });
  });

  it("multiple-choice answers keep comparing letters", async () => {
    servers.model.setScenario(clinicalScenario({ rolloutAnswers: ["B", "B", "A"] }));
    const cfg = servers.config();
    const { result } = await new Pipeline(cfg).run(chestPainCase("case-mc"), pipelineOptions(cfg, { ...SEARCH_ON, k: 3 }));
    expect(servers.model.stats().byAgent["equivalence-judge"]).toBeUndefined();
    expect(result.stability.clusters!.map((c) => [c.key, c.rule])).toEqual([["B", "option"], ["A", "option"]]);
    expect(result.stability.distribution).toEqual(result.stability.lexical!.distribution);
    expect(result.differential![0]).toMatchObject({ answer: { option: "B", text: "Inferior ST-elevation myocardial infarction" }, rollouts: 2, of: 3 });
  });
});
