import { describe, expect, it } from "vitest";
import { rolloutsByModel } from "../../src/eval/rollout-models.js";
import { buildSummary, summaryMarkdown } from "../../src/eval/report.js";
import { fromDiagnosis } from "../../src/eval/methods/medmmv.js";
import { isCorrect } from "../../src/eval/answer-match.js";
import type { ResultRecord } from "../../src/eval/results-file.js";
import { Pipeline, pipelineOptions } from "../../src/core/workflow/pipeline.js";
import { clinicalScenario } from "../../src/scripted/clinical-scenario.js";
import { scriptedOrigin } from "../../src/scripted/scripted-vendor-routes.js";
import { chestPainCase } from "../support/sample-cases.js";
import { useScriptedServers } from "../support/scripted-servers-fixture.js";
import { resultRecord, runManifest } from "./eval-fixtures.js";

const servers = useScriptedServers();

const PANEL = ["scripted-executor", "anthropic:claude-sonnet-4-5", "google-genai:gemini-2.5-flash"];

function medmmvRecord(id: string, answers: Array<string | null>, models: string[]): ResultRecord {
  return resultRecord(id, 0, "completed", { method: "medmmv", stability: { answers, rgm: 0, entropy: 0, models } });
}

describe("eval strata by rollout model", () => {
  it("grades each rollout on its own answer, by the model it ran on", () => {
    // Gold is A (the fixture's); a failed rollout (null) counts as a rollout, not as answered.
    const cells = rolloutsByModel([medmmvRecord("q1", ["A", "B", "A"], PANEL), medmmvRecord("q2", ["A", null, "C"], PANEL), resultRecord("q3", 0)]);
    expect(cells).toEqual({
      "scripted-executor": { rollouts: 2, answered: 2, correct: 2, accuracy: 1 },
      "anthropic:claude-sonnet-4-5": { rollouts: 2, answered: 1, correct: 0, accuracy: 0 },
      "google-genai:gemini-2.5-flash": { rollouts: 2, answered: 2, correct: 1, accuracy: 0.5 },
    });
  });

  it("a run without rollout models keeps its summary and report as they were", () => {
    const s = buildSummary([resultRecord("q1", 0)], runManifest("cot", "cot"));
    expect("rolloutsByModel" in s).toBe(false);
    expect(summaryMarkdown(s)).not.toContain("Rollouts by model");
    // One model: no section either (nothing to compare).
    const single = buildSummary([medmmvRecord("q1", ["A", "A"], ["m", "m"])], runManifest("medmmv", "medmmv"));
    expect(single.rolloutsByModel).toEqual({ m: { rollouts: 2, answered: 2, correct: 2, accuracy: 1 } });
    expect(summaryMarkdown(single)).not.toContain("Rollouts by model");
  });

  it("three rollouts on three vendors: the record and the report name each model", async () => {
    servers.model.setScenario(clinicalScenario({ rolloutAnswers: ["B", "A", "B"], identicalReasoning: false }));
    const origin = scriptedOrigin(servers.model.baseUrl);
    const cfg = servers.config({ MEDMMV_ROLLOUT_MODELS: PANEL.join(","), ANTHROPIC_API_KEY: "a", ANTHROPIC_BASE_URL: origin, GOOGLE_API_KEY: "g", GOOGLE_GENAI_BASE_URL: origin });
    const c = chestPainCase();
    const { result } = await new Pipeline(cfg).run(c, pipelineOptions(cfg, { k: 3 }));
    const out = fromDiagnosis(result);
    expect(out.stability?.models).toEqual(PANEL);
    const gold = { kind: "choice" as const, option: "B", text: c.options!.B! };
    const record: ResultRecord = { ...resultRecord(c.id, 0, out.status, { method: "medmmv", gold }), ...out, correct: isCorrect(out.answer, gold) };
    const summary = buildSummary([record], runManifest("medmmv", "mixed panel"));
    expect(summary.rolloutsByModel).toEqual({
      "scripted-executor": { rollouts: 1, answered: 1, correct: 1, accuracy: 1 },
      "anthropic:claude-sonnet-4-5": { rollouts: 1, answered: 1, correct: 0, accuracy: 0 },
      "google-genai:gemini-2.5-flash": { rollouts: 1, answered: 1, correct: 1, accuracy: 1 },
    });
    const md = summaryMarkdown(summary);
    expect(md).toContain("## Rollouts by model");
    for (const m of PANEL) expect(md).toMatch(new RegExp(`\\| ${m.replace(/[.]/g, "\\.")} +\\|`));
  });
});
