import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PromptLibrary } from "../../../src/core/llm/prompt-template.js";
import { HYPOTHESIS_WARNING_OPENING, referencePromptLibrary } from "../../../src/eval/probes/reference-prompts.js";
import { runEval } from "../../../src/eval/runner.js";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import type { ScriptedRequest, ScriptFn } from "../../../src/scripted/scripted-openai-server.js";
import { useScriptedServers } from "../../support/scripted-servers-fixture.js";

const servers = useScriptedServers({ scenario: clinicalScenario() });

describe("--hypothesis-warning off: the prompts as Dr-LLaVA's probes ran, without 'a claim to check'", () => {
  const shipped = new PromptLibrary();
  const reference = referencePromptLibrary();

  it("ours keeps the sentence in cot and rollout; the reference variant has it nowhere and differs in nothing else", () => {
    for (const name of ["cot", "rollout"]) expect(shipped.get(name).source).toContain(HYPOTHESIS_WARNING_OPENING);
    for (const [name, hash] of Object.entries(shipped.hashes())) {
      const mine = shipped.get(name).source;
      const theirs = reference.get(name).source;
      expect(theirs).not.toContain(HYPOTHESIS_WARNING_OPENING);
      const strip = (s: string) => s.split("\n").filter((l) => l.trim() !== "" && !l.includes(HYPOTHESIS_WARNING_OPENING));
      expect(strip(theirs)).toEqual(strip(mine));
      // A changed template has its own hash, so provenance tells the variants apart.
      expect(reference.hashes()[name] === hash).toBe(!mine.includes(HYPOTHESIS_WARNING_OPENING));
    }
  });

  describe("in a run", () => {
    let tmp: string;
    let input: string;
    beforeAll(async () => {
      tmp = await mkdtemp(path.join(tmpdir(), "medmmv-refprompts-"));
      input = path.join(tmp, "mcq.jsonl");
      const rows = [0, 1].map((i) => ({ id: `q${i}`, question: `Case ${i}: which option?`, options: { A: `alpha ${i}`, B: `bravo ${i}` }, answer: "A" }));
      await writeFile(input, rows.map((r) => JSON.stringify(r)).join("\n") + "\n");
    });
    afterAll(async () => {
      await rm(tmp, { recursive: true, force: true });
    });

    it("the model reads the clinician's statement with the warning by default, without it under off", async () => {
      const seen: Record<string, string[]> = {};
      for (const warning of [true, false]) {
        const prompts: string[] = (seen[String(warning)] = []);
        const base = clinicalScenario();
        const cot = base.agents["cot"] as ScriptFn;
        servers.model.setScenario({ ...base, agents: { ...base.agents, cot: (req: ScriptedRequest) => (prompts.push(req.text), cot(req)) } });
        const { summary } = await runEval(
          { dataset: "jsonl", input, method: "cot", hypothesis: "cq-w", ...(warning ? {} : { hypothesisWarning: false }), out: path.join(tmp, `out-${warning}`) },
          { config: servers.config(), progress: null },
        );
        expect(summary.label.endsWith("[no hypothesis warning]")).toBe(!warning);
      }
      expect(seen["true"]!.length).toBe(2);
      expect(seen["false"]!.length).toBe(2);
      for (const p of seen["true"]!) expect(p).toContain(HYPOTHESIS_WARNING_OPENING);
      for (const p of seen["false"]!) expect(p).not.toContain(HYPOTHESIS_WARNING_OPENING);
    });
  });
});
