import path from "node:path";
import { describe, expect, it } from "vitest";
import { runEval } from "../../../src/eval/runner.js";
import { readResults } from "../../../src/eval/results-file.js";
import { useScriptedServers } from "../../support/scripted-servers-fixture.js";
import type { Scenario, ScriptedRequest } from "../../../src/scripted/scripted-openai-server.js";
import { stagewiseScenario, type StagewiseBehaviour } from "../../support/stagewise-scenario.js";
import type { EvalItem } from "../../../src/eval/datasets/types.js";
import { until } from "../../support/until.js";
import { useTempDir } from "../datasets/dataset-kit.js";
import { GOLD, IMAGES, paidFor, useClinhalluItems } from "./clinhallu-fixture.js";

const servers = useScriptedServers();
const tmp = useTempDir("medmmv-stagewise-resume-");
const fixture = useClinhalluItems();
const ref = (it: EvalItem) => it.stagewise!.reference!;
let n = 0;

type KillPoint = number | ((req: ScriptedRequest) => boolean);

/** The scenario, with the run's signal aborted when the model receives its n-th call, or a call `at` picks (a kill mid-run). */
function killingAt(base: Scenario, at: KillPoint, ctrl: AbortController): Scenario {
  let seen = 0;
  const agents = Object.fromEntries(
    Object.entries(base.agents).map(([name, script]) => [
      name,
      (req: ScriptedRequest) => {
        if (typeof at === "number" ? ++seen === at : at(req)) ctrl.abort();
        return (script as (r: ScriptedRequest) => unknown)(req);
      },
    ]),
  );
  return { ...base, agents };
}

describe("stage-wise runs resume without re-paying finished calls", () => {
  // The second baseline attempt of original_index:0 (its first was invalid, so a checkpoint holds it).
  let idx0Traces = 0;
  const idx0Retry = (req: ScriptedRequest) => req.agent === "stagewise-trace" && req.text.includes("is there a midline shift?") && ++idx0Traces === 2;
  const cases: Array<{ name: string; behaviour: () => StagewiseBehaviour; calls: number; kills: KillPoint[] }> = [
    { name: "every trace valid", behaviour: () => ({}), calls: 64, kills: [3, 9, 30] },
    {
      // original_index:0's own visual stage is always 2 words: 2 more baseline attempts, 2 more for Rep-K
      // (which keeps that stage), and no answer judge on either invalid trace.
      name: "one item's traces invalid on every attempt (re-tries checkpointed too)",
      behaviour: () => ({ trace: (it) => (it.id === "original_index:0" ? { ...ref(it), visual: "too short" } : ref(it)) }),
      calls: 64 + 2 + 2 - 1 - 1,
      kills: [idx0Retry, 9, 30],
    },
  ];
  it.each(cases)("killed mid-run, resumed ($name): the second session makes exactly the calls the checkpoints lack, and the numbers match an uninterrupted run", async ({ behaviour, calls, kills }) => {
    const config = servers.config({ MEDMMV_LLM_BACKOFF_BASE_MS: "5" });
    const opts = { dataset: "clinhallu", input: GOLD, images: IMAGES, method: "stagewise" as const, concurrency: 2, out: "" };

    servers.model.setScenario(stagewiseScenario(fixture(), behaviour()));
    const whole = await runEval({ ...opts, out: path.join(tmp(), `whole-${++n}`) }, { config, progress: null });
    const uninterrupted = servers.model.stats().total;
    expect(uninterrupted).toBe(calls);

    let retryingLeft = 0;
    for (const [k, killAt] of kills.entries()) {
      const out = path.join(tmp(), `killed-${k}-${n}`);
      idx0Traces = 0;
      servers.model.reset();
      const ctrl = new AbortController();
      servers.model.setScenario(killingAt(stagewiseScenario(fixture(), behaviour()), killAt, ctrl));
      const first = await runEval({ ...opts, out }, { config, signal: ctrl.signal, progress: null });
      expect(first.interrupted).toBe(true);
      await until(() => (servers.model.stats().inFlight === 0 ? true : undefined), 10_000, "the killed run's calls to end");
      const session1 = servers.model.stats().total;
      const left = (await readResults(path.join(out, "results.jsonl"))).records;
      const saved = left.reduce((n, r) => n + paidFor(r), 0);
      retryingLeft += left.filter((r) => r.stagewise?.trace?.retrying || Object.values(r.stagewise?.replacements ?? {}).some((x) => x.trace.retrying)).length;
      expect(saved).toBeGreaterThan(0);
      expect(saved).toBeLessThan(uninterrupted);
      expect(session1).toBeGreaterThanOrEqual(saved);

      servers.model.reset();
      servers.model.setScenario(stagewiseScenario(fixture(), behaviour()));
      const second = await runEval({ ...opts, out, resume: true }, { config, progress: null });
      expect(servers.model.stats().total).toBe(uninterrupted - saved);
      expect(second.summary.failed).toBe(0);
      expect(second.summary.stagewise).toEqual(whole.summary.stagewise);
      // The resumed records account for every call once (usage carries the checkpoint's part).
      const done = (await readResults(path.join(out, "results.jsonl"))).records;
      expect(done.map((r) => r.status).every((s) => s !== "failed")).toBe(true);
      expect(done.reduce((n, r) => n + paidFor(r), 0)).toBe(uninterrupted);
    }
    // Killed at original_index:0's re-try: its invalid first attempt was checkpointed, and resumed from, not redone.
    if (kills.includes(idx0Retry)) expect(retryingLeft).toBeGreaterThan(0);
  });
});
