import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { readResults } from "../../../src/eval/results-file.js";
import { runEval } from "../../../src/eval/runner.js";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import type { ScriptedRequest } from "../../../src/scripted/scripted-openai-server.js";
import { HEALTHBENCH_DIR, healthbenchScenario } from "../../support/healthbench-scenario.js";
import { useScriptedServers } from "../../support/scripted-servers-fixture.js";
import { useTempDir } from "../datasets/dataset-kit.js";

/**
 * HealthBench grades what a person would read: MedMMV's composed reply, with the claims the
 * hallucination detector rejected left out, and CoT's whole answer — never the one-line answer
 * the rollout prompt asks for.
 */
const servers = useScriptedServers({ scenario: healthbenchScenario() });
const tmp = useTempDir("medmmv-healthbench-reply-");
const REJECTED = "Antibiotics shorten a tension headache";

function recordingScenario(graded: string[]) {
  const base = healthbenchScenario();
  const pipeline = clinicalScenario({ extraReplyStatements: [{ text: `${REJECTED} by two days.`, kind: "knowledge" }], unsupportedClaims: [REJECTED] });
  const grader = base.agents["rubric-grader"] as (req: ScriptedRequest) => unknown;
  return {
    ...base,
    agents: {
      ...base.agents,
      "reply-composer": pipeline.agents["reply-composer"]!,
      "hd-supervisor": pipeline.agents["hd-supervisor"]!,
      "rubric-grader": (req: ScriptedRequest) => {
        graded.push(/Assistant's reply:\n<<<MODEL_OUTPUT\n([\s\S]*?)\nMODEL_OUTPUT>>>/.exec(req.text)?.[1] ?? "");
        return grader(req);
      },
    },
  };
}

/** The scenario recording what the grader reads, and a file with the first synthetic example. */
async function setUp(graded: string[]): Promise<{ dir: string; input: string }> {
  servers.model.setScenario(recordingScenario(graded));
  const dir = tmp();
  const one = (await readFile(path.join(HEALTHBENCH_DIR, "healthbench-synthetic.jsonl"), "utf8")).split("\n")[0]!;
  const input = path.join(dir, "one.jsonl");
  await writeFile(input, `${one}\n`);
  return { dir, input };
}

describe("HealthBench grades the reply a person reads", () => {
  it("MedMMV: the grader's prompt holds the composed reply, and a claim the detector rejected is not in it", async () => {
    const graded: string[] = [];
    const { dir, input } = await setUp(graded);
    const out = path.join(dir, "run");
    await runEval({ dataset: "healthbench", input, method: "medmmv", out, concurrency: 1, saveResults: true }, { config: servers.config({ MEDMMV_K: "2" }), progress: null });
    const { records } = await readResults(path.join(out, "results.jsonl"));
    expect(records[0]!.status).toBe("completed");
    expect(servers.model.stats().byAgent["reply-composer"]).toBe(1);
    expect(graded.length).toBeGreaterThan(0);
    for (const reply of new Set(graded)) {
      // The composed reply: several sentences, the uncertainty and the advice in it …
      expect(reply).toMatch(/^The most likely answer is yes\. The case reports .+\. Other answers came up in some runs/);
      expect(reply).toContain("Confirm with the examination and tests");
      // … and not the statement the detector found unsupported, which is counted as left out.
      expect(reply).not.toContain(REJECTED);
      expect(reply).toContain("1 statement that could not be verified against the record and the evidence was left out.");
    }
    expect(records[0]!.usage.byAgent["reply-composer"]!.calls).toBe(1);
  });

  it("CoT: the grader reads the whole answer, its reasoning included", async () => {
    const graded: string[] = [];
    const { dir, input } = await setUp(graded);
    await runEval({ dataset: "healthbench", input, method: "cot", out: path.join(dir, "run-cot"), concurrency: 1 }, { config: servers.config(), progress: null });
    expect(graded.length).toBeGreaterThan(0);
    for (const reply of graded) expect(reply.startsWith("Scripted reasoning.\n\n")).toBe(true);
  });
});
