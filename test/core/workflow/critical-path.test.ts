import { describe, expect, it } from "vitest";
import { prepareCase } from "../../../src/core/intake/case-intake.js";
import type { PreparedCase } from "../../../src/core/contracts/clinical-case.js";
import { Pipeline, pipelineOptions, type PipelineOverrides } from "../../../src/core/workflow/pipeline.js";
import { clinicalScenario, type ClinicalScenarioOptions } from "../../../src/scripted/clinical-scenario.js";
import { smallPng } from "../../../src/scripted/image-bytes.js";
import { chestPainCase } from "../../support/sample-cases.js";
import { useScriptedServers } from "../../support/scripted-servers-fixture.js";

/**
 * usage.criticalPathCalls — the denominator of every critical-path figure in BENCHMARKS.md —
 * against chains counted by hand from the pipeline's shape (docs/architecture.md#the-pipeline). Each model call or
 * search adds one to the chain of the branch that makes it; parallel branches count once;
 * a step that waits on several branches starts after the longest:
 *
 *   evidence  E = max(text-doctor 1, image-doctor 1 + image-hd 1 when there is an image)
 *                 + (search on: web-search-query 1 + one pair's search 1 + its analysis 1)
 *   stage 1   R = 1 (one rollout); an adaptive second round starts when the first round
 *                 is done, without waiting for the evidence: R2 = 1 + 1
 *   join      J = max(E, R) (or max(E, R2))
 *   refine    J + hd 1 + (auto-repair 1 + hd 1) per repair + coherence 1
 *
 * The scripted servers answer at once: the chain is counted, not timed.
 */
const servers = useScriptedServers({ search: true });

async function withImage(): Promise<PreparedCase> {
  const base = chestPainCase("case-cp-image");
  return prepareCase(
    { id: base.id, question: base.question, notes: base.notes, options: base.options, patient: base.patient, images: [{ id: "ecg1", data: smallPng(8, 8).toString("base64"), caption: "12-lead ECG" }] },
    { maxBytes: 5_000_000, maxPixels: 10_000_000, allowPath: false },
  );
}

async function criticalPath(scenario: ClinicalScenarioOptions, overrides: PipelineOverrides, c: PreparedCase = chestPainCase()) {
  servers.model.setScenario(clinicalScenario(scenario));
  servers.model.reset();
  servers.search.reset();
  const cfg = servers.config();
  const { result } = await new Pipeline(cfg).run(c, pipelineOptions(cfg, overrides));
  expect(result.status).toBe("completed");
  return { calls: result.usage.criticalPathCalls, byAgent: servers.model.stats().byAgent, searches: servers.search.stats().total, result };
}

const OFF = { ablations: { noWebSearch: true } } satisfies PipelineOverrides;
const ON = { maxSearchPairs: 2 } satisfies PipelineOverrides;

describe("usage.criticalPathCalls against chains counted by hand", () => {
  it("no repairs, search off: rollout ∥ text-doctor, then hd and coherence = 3", async () => {
    const r = await criticalPath({ rolloutAnswers: ["B"] }, { ...OFF, k: 3, maxRepairs: 2 });
    expect(r.byAgent).toMatchObject({ rollout: 3, "text-doctor": 1, "hd-supervisor": 1, "coherence-judge": 1 });
    expect(r.searches).toBe(0);
    expect(r.calls).toBe(1 + 1 + 1);
  });

  it("no repairs, search on: text-doctor, query, search, analysis = 4, then hd and coherence = 6", async () => {
    const r = await criticalPath({ rolloutAnswers: ["B"] }, { ...ON, k: 3, maxRepairs: 2 });
    // Two pairs searched in parallel: each pair's chain is search + analysis, counted once.
    expect(r.byAgent).toMatchObject({ "web-search-query": 1, "web-search-analysis": 2 });
    expect(r.searches).toBe(2);
    expect(r.calls).toBe(4 + 1 + 1);
  });

  it("repairs, search off: the path needing two repairs sets the chain (1 + hd, repair, hd, repair, hd + coherence = 7)", async () => {
    const r = await criticalPath({ rolloutAnswers: ["B", "A", "B"], identicalReasoning: false, repairsNeeded: { A: 2 } }, { ...OFF, k: 3, maxRepairs: 3 });
    expect(r.byAgent["auto-repair"]).toBe(2);
    expect(r.calls).toBe(1 + (1 + 2 * 2) + 1);
  });

  it("repairs stop at maxRepairs: one repair allowed of the five asked for (1 + hd, repair, hd + coherence = 5)", async () => {
    const r = await criticalPath({ rolloutAnswers: ["A"], repairsNeeded: { A: 5 } }, { ...OFF, k: 2, maxRepairs: 1 });
    expect(r.byAgent["auto-repair"]).toBe(1);
    expect(r.calls).toBe(1 + (1 + 2 * 1) + 1);
  });

  it("repairs, search on: evidence 4, then hd, repair, hd and coherence = 8", async () => {
    const r = await criticalPath({ rolloutAnswers: ["A"], repairsNeeded: { A: 1 } }, { ...ON, k: 2, maxRepairs: 3 });
    expect(r.calls).toBe(4 + (1 + 2 * 1) + 1);
  });

  it("adaptive, first round agrees: no second round, the same chain as without it (3)", async () => {
    const r = await criticalPath({ rolloutAnswers: ["B"] }, { ...OFF, k: 5, adaptive: true, maxRepairs: 2 });
    expect(r.byAgent.rollout).toBe(3);
    expect(r.calls).toBe(3);
  });

  it("adaptive second round, search off: it starts after the first round (1), so rollouts end at 2, then hd and coherence = 4", async () => {
    const r = await criticalPath({ rolloutAnswers: ["B", "C", "B", "B", "A"], identicalReasoning: false }, { ...OFF, k: 5, adaptive: true, maxRepairs: 2 });
    expect(r.byAgent.rollout).toBe(5);
    expect(r.result.provenance.config).toMatchObject({ adaptive: true, rolloutsSampled: 5 });
    expect(r.calls).toBe(1 + 1 + 1 + 1);
  });

  it("adaptive second round, search on: it ends at 2, beside the evidence (4), so the join is 4, then 6 — no extra link", async () => {
    const r = await criticalPath({ rolloutAnswers: ["B", "C", "B", "B", "A"], identicalReasoning: false }, { ...ON, k: 5, adaptive: true, maxRepairs: 2 });
    expect(r.byAgent.rollout).toBe(5);
    expect(r.calls).toBe(4 + 1 + 1);
  });

  it("an image: image-doctor and image-hd (2) outlast text-doctor; search off 4, search on 7", async () => {
    const c = await withImage();
    const off = await criticalPath({ rolloutAnswers: ["B"] }, { ...OFF, k: 2, maxRepairs: 2 }, c);
    expect(off.byAgent).toMatchObject({ "image-doctor": 1, "image-hd": 1 });
    expect(off.calls).toBe(2 + 1 + 1);
    const on = await criticalPath({ rolloutAnswers: ["B"] }, { ...ON, k: 2, maxRepairs: 2 }, c);
    expect(on.calls).toBe(2 + 3 + 1 + 1);
  });
});
