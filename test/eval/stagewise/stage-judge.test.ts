import path from "node:path";
import { describe, expect, it } from "vitest";
import { runEval, type EvalRunOptions } from "../../../src/eval/runner.js";
import { readResults } from "../../../src/eval/results-file.js";
import { clinicalScenario } from "../../../src/scripted/clinical-scenario.js";
import { useScriptedServers } from "../../support/scripted-servers-fixture.js";
import type { ScriptedRequest } from "../../../src/scripted/scripted-openai-server.js";
import { stagewiseScenario } from "../../support/stagewise-scenario.js";
import { until } from "../../support/until.js";
import { useTempDir } from "../datasets/dataset-kit.js";
import { GOLD, IMAGES, useClinhalluItems } from "./clinhallu-fixture.js";

const servers = useScriptedServers();
const tmp = useTempDir("medmmv-stage-judge-");
const fixture = useClinhalluItems();
let n = 0;

const byQuestion = () => new Map(fixture().map((it) => [it.case.question, it]));
/** A CoT that writes the reference stages as tagged steps and answers with the gold answer. */
function stagedCot(req: ScriptedRequest) {
  const it = byQuestion().get(/Question:\n([^\n]*)/.exec(req.text)?.[1] ?? "")!;
  const r = it.stagewise!.reference!;
  const steps = (["visual", "knowledge", "reasoning"] as const).map((stage) => ({ text: r[stage], stage }));
  return { steps, answer: it.gold.kind === "choice" ? { option: it.gold.option, text: it.gold.text } : { option: null, text: it.gold.text } };
}

async function run(opts: Partial<EvalRunOptions>, signal?: AbortSignal) {
  const out = opts.out ?? path.join(tmp(), `out-${++n}`);
  const r = await runEval({ dataset: "clinhallu", input: GOLD, images: IMAGES, out, concurrency: 2, stageJudge: true, ...opts }, { config: servers.config({ MEDMMV_LLM_BACKOFF_BASE_MS: "5" }), progress: null, signal });
  return { ...r, out, records: (await readResults(path.join(out, "results.jsonl"))).records };
}

describe("--stage-judge puts CoT and MedMMV on ClinHallu's scale", () => {
  it("CoT with stage-tagged steps: each stage judged against the reference stage", async () => {
    const base = stagewiseScenario(fixture());
    servers.model.setScenario({ ...base, agents: { ...base.agents, "cot-staged": stagedCot } });
    const { summary, records } = await run({ method: "cot" });
    expect(summary.label).toBe("cot + stage judge");
    expect(summary.accuracy).toBe(1);
    expect(summary.stagewise).toMatchObject({ format: "path", acc: 1, hV: null, hK: null, hR: null, hFrom: { hV: "none", hK: "none", hR: "none" }, baseline: { stages: { visual: { rate: 0 }, knowledge: { rate: 0 }, reasoning: { rate: 0 } } } });
    expect(servers.model.stats().byAgent).toMatchObject({ "cot-staged": 4, "stage-judge": 12 });
    expect(servers.model.stats().byAgent["cot"]).toBeUndefined();
    // The steps are not kept on the final record: the judged trace holds them.
    expect(records.every((r) => r.steps === undefined && r.stagewise?.trace?.stages.visual !== "")).toBe(true);
  });

  it("MedMMV: its final path's steps by stage; a stage the path lacks is not judged; the HD counts stay beside", async () => {
    const base = stagewiseScenario(fixture());
    const clinical = clinicalScenario({});
    const withEvidence: boolean[] = [];
    const judge = (req: ScriptedRequest) => {
      // The graph's count line closes its rendering (render-for-prompt.ts).
      withEvidence.push(/The evidence graph the method built for its answer:\n\[[\s\S]*\nEvidence graph: \d+ active nodes/.test(req.text));
      return (base.agents["stage-judge"] as (r: ScriptedRequest) => unknown)(req);
    };
    servers.model.setScenario({ ...clinical, agents: { ...clinical.agents, "stage-judge": judge, "answer-judge": base.agents["answer-judge"]! } });
    const { summary, records } = await run({ method: "medmmv", pipeline: { k: 2 } });
    expect(summary.failed).toBe(0);
    expect(summary.label).toBe("medmmv + stage judge");
    // The scripted rollout writes knowledge and reasoning steps only, in words unlike the reference: both flagged.
    expect(summary.stagewise).toMatchObject({ format: "path", hV: null, hK: null, hR: null, baseline: { stages: { visual: { rate: null, total: 0 }, knowledge: { rate: 1 }, reasoning: { rate: 1 } } } });
    expect(base.stageJudgeCalls.map((c) => c.stage).sort()).toEqual([...Array(4).fill("knowledge"), ...Array(4).fill("reasoning")]);
    expect(records.every((r) => r.stagewise?.judged.visual === undefined && r.hallucinations !== undefined && r.cu !== null)).toBe(true);
    // The knowledge and reasoning judges see the evidence graph of the selected path; the final records do not keep it.
    expect(withEvidence).toEqual(Array(8).fill(true));
    expect(records.every((r) => r.stagewise?.evidence === undefined)).toBe(true);
    expect(summary.models).toMatchObject({ judge: "scripted-judge" });
  });

  it("killed while judging, resumed: the method is not run again", async () => {
    const base = stagewiseScenario(fixture());
    const ctrl = new AbortController();
    let judged = 0;
    servers.model.setScenario({
      ...base,
      agents: {
        ...base.agents,
        "cot-staged": stagedCot,
        "stage-judge": (req: ScriptedRequest) => {
          if (++judged === 5) ctrl.abort();
          return (base.agents["stage-judge"] as (r: ScriptedRequest) => unknown)(req);
        },
      },
    });
    const first = await run({ method: "cot", concurrency: 4 }, ctrl.signal);
    expect(first.interrupted).toBe(true);
    await until(() => (servers.model.stats().inFlight === 0 ? true : undefined), 10_000, "the killed run's calls to end");
    const cotCalls = servers.model.stats().byAgent["cot-staged"]!;
    const checkpointed = first.records.filter((r) => r.status === "failed" && r.steps?.length).length;
    const finished = first.records.filter((r) => r.status === "completed").length;
    expect(checkpointed).toBeGreaterThan(0);
    servers.model.reset();
    servers.model.setScenario({ ...base, agents: { ...base.agents, "cot-staged": stagedCot } });
    const second = await run({ method: "cot", out: first.out, resume: true });
    expect(second.summary.failed).toBe(0);
    expect(second.summary.stagewise).toMatchObject({ acc: 1, baseline: { stages: { visual: { rate: 0 }, knowledge: { rate: 0 }, reasoning: { rate: 0 } } } });
    // Only the items that neither finished nor left a checkpoint run CoT again.
    expect(servers.model.stats().byAgent["cot-staged"] ?? 0).toBe(4 - checkpointed - finished);
    expect(cotCalls).toBeGreaterThanOrEqual(checkpointed + finished);
  });
});
