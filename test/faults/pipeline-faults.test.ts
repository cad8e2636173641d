import { afterAll, describe, expect, it } from "vitest";
import { useScriptedServers } from "../support/scripted-servers-fixture.js";
import { smallPng } from "../../src/scripted/image-bytes.js";
import { clinicalScenario } from "../../src/scripted/clinical-scenario.js";
import { scriptedConfig } from "../../src/scripted/scripted-config.js";
import { chestPainCase } from "../support/sample-cases.js";
import { recordReliability, type ReliabilityRow } from "../support/reliability-recorder.js";
import { Pipeline, pipelineOptions } from "../../src/core/workflow/pipeline.js";
import { DiagnosisResult } from "../../src/core/contracts/diagnosis-result.js";
import type { PreparedCase } from "../../src/core/contracts/clinical-case.js";
import type { Fault } from "../../src/scripted/faults.js";

/**
 * Every agent, one at a time, fails for good (HTTP 500, garbage JSON, a hang). The case
 * must end either completed from the remaining branches, or failed with a clear reason —
 * never a null or partial result marked complete — and the failure is recorded on its branch.
 */
const rows: ReliabilityRow[] = [];

// A 1×1 PNG so the image doctor runs too.
const PNG_1X1 = smallPng(1, 1).toString("base64");
function caseWithImage(): PreparedCase {
  return { ...chestPainCase(), images: [{ id: "img1", mimeType: "image/png", data: PNG_1X1, sha256: "x" }] };
}

const servers = useScriptedServers({ scenario: clinicalScenario({ rolloutAnswers: ["B", "C", "B", "A", "B"], identicalReasoning: false }), search: true });
afterAll(({}, suite) => recordReliability("pipeline-faults", rows, suite));

/** Agents whose loss leaves something to answer with; the others fail the case clearly. */
const RECOVERABLE = new Set(["text-doctor", "image-doctor", "image-hd", "web-search-query", "web-search-analysis", "auto-repair"]);
const AGENTS = ["rollout", "text-doctor", "image-doctor", "image-hd", "web-search-query", "web-search-analysis", "hd-supervisor", "auto-repair", "coherence-judge"];
const FAULTS: Array<[string, Fault]> = [
  ["HTTP 500", { kind: "status", status: 500 }],
  ["schema-violating JSON", { kind: "schema-violation" }],
  ["hang", { kind: "hang" }],
];

function assertSound(result: DiagnosisResult) {
  expect(() => DiagnosisResult.parse(result)).not.toThrow();
  if (result.status === "completed") {
    expect(result.answer).not.toBeNull();
    expect(result.path).not.toBeNull();
    const selected = result.candidates.filter((c) => c.selected);
    expect(selected).toHaveLength(1);
    expect(selected[0]!.scores).not.toBeNull();
    expect(result.error).toBeUndefined();
  } else {
    expect(result.status).toBe("failed");
    expect(result.answer).toBeNull();
    expect(result.error?.message).toBeTruthy();
  }
}

describe("one agent failing for good", () => {
  for (const agent of AGENTS)
    for (const [label, fault] of FAULTS)
      it(`${agent}: ${label}`, async () => {
        // auto-repair only runs when a path is flagged: path C needs a repair.
        servers.model.setScenario(clinicalScenario({ rolloutAnswers: ["B", "C", "B", "A", "B"], identicalReasoning: false, repairsNeeded: { C: 1 } }));
        servers.model.addFault({ ...fault, agent } as Fault);
        const cfg = servers.config({ MEDMMV_LLM_MAX_ATTEMPTS: "2", MEDMMV_LLM_TIMEOUT_MS: "300" });
        const { result } = await new Pipeline(cfg).run(caseWithImage(), pipelineOptions(cfg));
        assertSound(result);
        expect(servers.model.stats().byAgent[agent] ?? 0).toBeGreaterThan(0);
        if (RECOVERABLE.has(agent)) {
          expect(result.status).toBe("completed");
          expect(result.provenance.failures!.length).toBeGreaterThan(0);
        } else if (agent === "rollout") {
          expect(result.status).toBe("failed");
          expect(result.error!.message).toMatch(/rollouts failed/);
        } else {
          expect(result.status).toBe("failed");
          expect(result.error!.message).toMatch(/no candidate path/);
          expect(result.candidates.every((c) => c.error)).toBe(true);
        }
        rows.push({ suite: "pipeline", scenario: `${agent} always fails (${label})`, trials: 1, outcome: `${result.status}${result.error ? `: ${result.error.message.slice(0, 60)}` : `, ${result.provenance.failures!.length} branch failure(s) recorded`}`, itemsLost: 0 });
      });

  it("a branch that throws keeps its siblings' results", async () => {
    // Only rollout 3's path fails refinement (its coherence judge call always errors).
    servers.model.setScenario(clinicalScenario({ rolloutAnswers: ["B", "C", "A", "D", "E"], identicalReasoning: false }));
    servers.model.addFault({ kind: "status", status: 500, agent: "coherence-judge", textIncludes: "Answer: (A)" });
    const cfg = scriptedConfig(servers.model.baseUrl, { MEDMMV_LLM_MAX_ATTEMPTS: "2" });
    const { result } = await new Pipeline(cfg).run(chestPainCase(), pipelineOptions(cfg));
    assertSound(result);
    expect(result.status).toBe("completed");
    expect(result.candidates.filter((c) => c.scores)).toHaveLength(4);
    expect(result.candidates.find((c) => c.pathId === "path-3")!.error!.code).toBe("LLM_RETRYABLE");
    expect(result.provenance.failures!.map((f) => f.branch)).toEqual(["path-3"]);
    rows.push({ suite: "pipeline", scenario: "one refinement branch throws, 4 siblings succeed", trials: 1, outcome: "completed with 4 scored candidates; failure on path-3", itemsLost: 0 });
  });

  it("search provider down: web search recorded as failed, the case completes", async () => {
    servers.search.addFault({ kind: "status", status: 503 });
    const cfg = servers.config();
    const { result } = await new Pipeline(cfg).run(chestPainCase(), pipelineOptions(cfg));
    assertSound(result);
    expect(result.status).toBe("completed");
    expect(result.provenance.failures!.every((f) => f.branch.startsWith("web-search"))).toBe(true);
    expect(result.provenance.failures!.every((f) => f.code === "SEARCH_FAILED")).toBe(true);
    expect(result.provenance.failures!.length).toBeGreaterThan(0);
    rows.push({ suite: "pipeline", scenario: "search provider answers 503", trials: 1, outcome: "completed; web-search failures in provenance", itemsLost: 0 });
  });
});
