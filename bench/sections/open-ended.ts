import { Pipeline, pipelineOptions, type PipelineOverrides } from "../../src/core/workflow/pipeline.js";
import type { DiagnosisResult } from "../../src/core/contracts/diagnosis-result.js";
import type { BenchContext } from "../harness/context.js";
import type { BenchScenarioOptions } from "../harness/bench-scenario.js";
import { benchCase } from "../harness/cases.js";
import { table, yesNo, type SectionReport } from "../harness/report.js";

/** Rollouts per case in every run of this section. */
const K = 5;

/** One pneumonia in four wordings, and one other diagnosis: what a real model's five open answers look like. */
const PNEUMONIA = ["Severe community-acquired pneumonia", "CAP, severe", "Right lower lobe pneumonia", "Severe pneumonia acquired in the community"];
const FIVE: BenchScenarioOptions = { rolloutAnswers: [PNEUMONIA[0]!, "Pulmonary embolism", PNEUMONIA[1]!, PNEUMONIA[2]!, PNEUMONIA[3]!], identicalReasoning: false, synonyms: [PNEUMONIA] };
const ONE: BenchScenarioOptions = { rolloutAnswers: [PNEUMONIA[0]!], identicalReasoning: false };

/** The bench's long case asked as clinicians ask: no options. */
function openCase(id: string, images: number) {
  const { options: _options, ...rest } = benchCase(id, { length: "long", images });
  return rest;
}

const judgeOf = (r: DiagnosisResult) => r.usage.byAgent["equivalence-judge"];

/**
 * Open-ended cases (docs/architecture.md#scores): what comparing answers by meaning costs.
 * The equivalence judge is one call sent beside the refine branches, so it should add no link
 * to the critical path in any setting. Counted at L = 0: calls, tokens and links are
 * properties of the pipeline's shape, not of time.
 */
export async function openEnded(ctx: BenchContext): Promise<SectionReport> {
  const started = Date.now();
  await ctx.servers.setLatency(0);
  const cfg = ctx.config();
  const pipeline = new Pipeline(cfg);
  const rows: Array<Array<string | number>> = [];
  const verdicts = [];
  // The judge runs beside the refine branches (at least two calls each): it may add no link anywhere.
  const settings: Array<{ name: string; images: number; overrides: PipelineOverrides; maxExtra: number }> = [
    { name: "search on, one image", images: 1, overrides: { k: K }, maxExtra: 0 },
    { name: "search off, one image", images: 1, overrides: { k: K, ablations: { noWebSearch: true } }, maxExtra: 0 },
    { name: "search off, no image", images: 0, overrides: { k: K, ablations: { noWebSearch: true } }, maxExtra: 0 },
  ];
  let i = 0;
  for (const s of settings) {
    await ctx.servers.setScenario(ONE);
    const one = (await pipeline.run(openCase(`open-one-${i}`, s.images), pipelineOptions(cfg, s.overrides))).result;
    await ctx.servers.setScenario(FIVE);
    const five = (await pipeline.run(openCase(`open-five-${i}`, s.images), pipelineOptions(cfg, s.overrides))).result;
    i++;
    for (const [wordings, r] of [["one wording", one], ["five wordings (4 + 1)", five]] as const) {
      const j = judgeOf(r);
      rows.push([
        s.name,
        wordings,
        j?.calls ?? 0,
        j ? `${j.promptTokens ?? 0} + ${j.completionTokens ?? 0}` : "–",
        `${r.usage.criticalPathCalls ?? "?"} (${(r.usage.criticalPathCalls ?? 0) - (one.usage.criticalPathCalls ?? 0) >= 0 ? "+" : ""}${(r.usage.criticalPathCalls ?? 0) - (one.usage.criticalPathCalls ?? 0)})`,
        r.usage.llmCalls,
        (r.stability.clusters ?? []).map((c) => c.rollouts.length).join(" + "),
        r.stability.entropy.toFixed(2),
      ]);
    }
    const extra = (five.usage.criticalPathCalls ?? 0) - (one.usage.criticalPathCalls ?? 0);
    verdicts.push({
      target: `the equivalence judge: one call, at most ${s.maxExtra} extra critical-path link(s) (${s.name})`,
      measured: `${judgeOf(five)?.calls ?? 0} call(s), ${extra} extra link(s); one wording: ${judgeOf(one)?.calls ?? 0} call(s)`,
      met: judgeOf(five)?.calls === 1 && !judgeOf(one) && extra <= s.maxExtra,
    });
    ctx.log(`open-ended: ${s.name}: judge ${judgeOf(five)?.calls ?? 0} call(s), critical path ${one.usage.criticalPathCalls} → ${five.usage.criticalPathCalls}`);
  }
  const body = [
    `k = ${K}, the long case with one image asked without options, L = 0. The rollouts name one pneumonia in four wordings (${PNEUMONIA.map((w) => `"${w}"`).join(", ")}) and once "Pulmonary embolism"; the scripted judge groups them by the contract ({"groups": [[1,3,4,5],[2]]}). "critical path" counts the longest chain of dependent calls, with the change against the same case in one wording. Tokens are the scripted server's (prompt + completion).`,
    "",
    table(["setting", "rollout answers", "judge calls", "judge tokens", "critical path", "model calls", "clusters", "entropy (bits)"], rows),
    "",
    `The judge's call is sent beside the refine branches (each at least a detector and a coherence call), so it adds no link whatever the evidence chain: search on ${yesNo(verdicts[0]!.met)}, search off with an image ${yesNo(verdicts[1]!.met)}, a text-only case with search off ${yesNo(verdicts[2]!.met)}. A case whose answers the rules merge (one wording, abbreviations) makes no judge call.`,
  ].join("\n");
  return { id: "open-ended", title: "Open-ended answers: the equivalence judge's cost", command: `npm run bench -- --only open-ended${ctx.argsNote}`, body, verdicts, seconds: (Date.now() - started) / 1000 };
}
