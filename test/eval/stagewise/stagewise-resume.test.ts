import path from "node:path";
import { describe, expect, it } from "vitest";
import { runEval } from "../../../src/eval/runner.js";
import { readResults } from "../../../src/eval/results-file.js";
import { useScriptedServers } from "../../support/scripted-servers-fixture.js";
import type { Scenario, ScriptedRequest } from "../../support/scripted-openai-server.js";
import { stagewiseScenario } from "../../support/stagewise-scenario.js";
import { until } from "../../support/until.js";
import { useTempDir } from "../datasets/dataset-kit.js";
import { GOLD, IMAGES, paidFor, useClinhalluItems } from "./clinhallu-fixture.js";

const servers = useScriptedServers();
const tmp = useTempDir("medmmv-stagewise-resume-");
const fixture = useClinhalluItems();

/** The scenario, with the run's signal aborted when the model receives its n-th call (a kill mid-run). */
function killingAt(base: Scenario, n: number, ctrl: AbortController): Scenario {
  let seen = 0;
  const agents = Object.fromEntries(
    Object.entries(base.agents).map(([name, script]) => [
      name,
      (req: ScriptedRequest) => {
        if (++seen === n) ctrl.abort();
        return (script as (r: ScriptedRequest) => unknown)(req);
      },
    ]),
  );
  return { ...base, agents };
}

describe("stage-wise runs resume without re-paying finished calls", () => {
  it("killed mid-run, resumed: the second session makes exactly the calls the checkpoints lack, and the numbers match an uninterrupted run", async () => {
    const config = servers.config({ MEDMMV_LLM_BACKOFF_BASE_MS: "5" });
    const opts = { dataset: "clinhallu", input: GOLD, images: IMAGES, method: "stagewise" as const, concurrency: 2 };

    servers.model.setScenario(stagewiseScenario(fixture()));
    const whole = await runEval({ ...opts, out: path.join(tmp(), "whole") }, { config, progress: null });
    const uninterrupted = servers.model.stats().total;
    expect(uninterrupted).toBe(56);

    for (const killAt of [9, 30]) {
      const out = path.join(tmp(), `killed-${killAt}`);
      servers.model.reset();
      const ctrl = new AbortController();
      servers.model.setScenario(killingAt(stagewiseScenario(fixture()), killAt, ctrl));
      const first = await runEval({ ...opts, out }, { config, signal: ctrl.signal, progress: null });
      expect(first.interrupted).toBe(true);
      await until(() => (servers.model.stats().inFlight === 0 ? true : undefined), 10_000, "the killed run's calls to end");
      const session1 = servers.model.stats().total;
      const left = (await readResults(path.join(out, "results.jsonl"))).records;
      const saved = left.reduce((n, r) => n + paidFor(r), 0);
      expect(saved).toBeGreaterThan(0);
      expect(saved).toBeLessThan(uninterrupted);
      expect(session1).toBeGreaterThanOrEqual(saved);

      servers.model.reset();
      servers.model.setScenario(stagewiseScenario(fixture()));
      const second = await runEval({ ...opts, out, resume: true }, { config, progress: null });
      expect(servers.model.stats().total).toBe(uninterrupted - saved);
      expect(second.summary.failed).toBe(0);
      expect(second.summary.stagewise).toEqual(whole.summary.stagewise);
      // The resumed records account for every call once (usage carries the checkpoint's part).
      const done = (await readResults(path.join(out, "results.jsonl"))).records;
      expect(done.map((r) => r.status).every((s) => s === "completed")).toBe(true);
      expect(done.reduce((n, r) => n + paidFor(r), 0)).toBe(uninterrupted);
    }
  });
});
