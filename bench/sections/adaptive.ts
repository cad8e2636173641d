import { Pipeline, pipelineOptions } from "../../src/core/workflow/pipeline.js";
import type { BenchContext } from "../harness/context.js";
import type { BenchScenarioOptions } from "../harness/bench-scenario.js";
import { benchCase } from "../harness/cases.js";
import { pct, table, yesNo, type SectionReport } from "../harness/report.js";

export const TARGET_SAVED = 0.3;
/** Rollouts per case in every run of this section. */
const K = 5;

interface AdaptiveScenario {
  name: string;
  agreeing: boolean;
  scenario: BenchScenarioOptions;
}

const SCENARIOS: AdaptiveScenario[] = [
  { name: "agree, identical reasoning", agreeing: true, scenario: { rolloutAnswers: ["A"], identicalReasoning: true } },
  { name: "agree, distinct reasoning", agreeing: true, scenario: { rolloutAnswers: ["A"], identicalReasoning: false } },
  { name: "agree, distinct, 1 repair each", agreeing: true, scenario: { rolloutAnswers: ["A"], identicalReasoning: false, repairsNeeded: { A: 1 } } },
  { name: "agree, distinct, 3 repairs each", agreeing: true, scenario: { rolloutAnswers: ["A"], identicalReasoning: false, repairsNeeded: { A: 3 } } },
  { name: "first 3 agree, last 2 dissent", agreeing: true, scenario: { rolloutAnswers: ["A", "A", "A", "B", "C"], identicalReasoning: false } },
  { name: "disagree in the first round", agreeing: false, scenario: { rolloutAnswers: ["A", "B", "A", "A", "C"], identicalReasoning: false } },
  { name: "disagree, 1 repair each", agreeing: false, scenario: { rolloutAnswers: ["A", "B", "C", "A", "A"], identicalReasoning: false, repairsNeeded: { A: 1, B: 1, C: 1 } } },
];

type CallCounts = { llmCalls: number; byAgent: Record<string, { calls: number } | undefined> };

/** The stages adaptive sampling acts on: one list for the table's column and the paragraph's evidence count. */
const REFINE_AGENTS = ["rollout", "hd-supervisor", "auto-repair", "coherence-judge"];

/** Model calls of the rollout and refine stages. */
const refineCalls = (u: CallCounts): number => REFINE_AGENTS.reduce((n, a) => n + (u.byAgent[a]?.calls ?? 0), 0);

/** Model calls of the evidence graph (TextDoctor, ImageDoctor and its check, planner, analyses): no sampling rule saves them. */
const evidenceCalls = (u: CallCounts): number => u.llmCalls - refineCalls(u);

/** The paragraph under the table, every figure in it from this run. */
function reading(m: { neither: number; dedupeOnly: number; both: number; bothSaved: number; bothSame: boolean; evidenceCalls: number }): string {
  // With identical reasoning, dedupe already refined one path; the most any sampling rule
  // could still save is every rollout but one.
  const bestCase = (K - 1) / m.dedupeOnly;
  return `On the identical-reasoning scenario, measured with both switches: neither ${m.neither} model calls, dedupe alone ${m.dedupeOnly}, dedupe and adaptive ${m.both} — together they save **${pct(m.bothSaved)}** against neither, answer ${m.bothSame ? "the same" : "DIFFERENT"}. Of dedupe's ${m.dedupeOnly} calls, ${m.evidenceCalls} build the evidence graph, which no sampling rule can save; even a single rollout instead of ${K} would save only ${K - 1} (${pct(bestCase)}). Against the whole case, those fixed evidence calls dilute every saving in the table; the figures are per case, all calls counted.`;
}

/**
 * Adaptive rollouts (`adaptive: true`, `--adaptive`): a first round of 3 rollouts, and the
 * remaining k − 3 only when those disagree. Same case with adaptive off and on; model calls
 * and the selected answer compared. Dedupe on (the default) in both.
 */
export async function adaptiveRollouts(ctx: BenchContext): Promise<SectionReport> {
  const started = Date.now();
  await ctx.servers.setLatency(0);
  const cfg = ctx.config();
  const pipeline = new Pipeline(cfg);
  const rows: Array<Array<string | number>> = [];
  const verdicts = [];
  // Identical rollouts are where dedupe and adaptive sampling save the same calls: measured
  // here with neither switch against both, so each one's share is visible.
  await ctx.servers.setScenario(SCENARIOS[0]!.scenario);
  const neither = (await pipeline.run(benchCase("ad-neither"), pipelineOptions(cfg, { k: K, adaptive: false, dedupe: false }))).result;
  const dedupeOnly = (await pipeline.run(benchCase("ad-dedupe"), pipelineOptions(cfg, { k: K, adaptive: false, dedupe: true }))).result;
  const both = (await pipeline.run(benchCase("ad-both"), pipelineOptions(cfg, { k: K, adaptive: true, dedupe: true }))).result;
  const bothSaved = 1 - both.usage.llmCalls / neither.usage.llmCalls;
  const bothSame = JSON.stringify(both.answer) === JSON.stringify(neither.answer);
  let i = 0;
  for (const s of SCENARIOS) {
    await ctx.servers.setScenario(s.scenario);
    const off = (await pipeline.run(benchCase(`ad-off-${i}`), pipelineOptions(cfg, { k: K, adaptive: false }))).result;
    const on = (await pipeline.run(benchCase(`ad-on-${i}`), pipelineOptions(cfg, { k: K, adaptive: true }))).result;
    i++;
    const saved = 1 - on.usage.llmCalls / off.usage.llmCalls;
    const stageSaved = 1 - refineCalls(on.usage) / refineCalls(off.usage);
    const same = JSON.stringify(on.answer) === JSON.stringify(off.answer);
    rows.push([s.name, s.agreeing ? "agreeing" : "disagreeing", `${off.usage.byAgent.rollout?.calls ?? 0} → ${on.usage.byAgent.rollout?.calls ?? 0}`, off.usage.llmCalls, on.usage.llmCalls, `**${pct(saved)}**`, `${refineCalls(off.usage)} → ${refineCalls(on.usage)} (${pct(stageSaved)})`, `${off.answer?.option ?? "–"} / ${on.answer?.option ?? "–"}`, yesNo(same)]);
    if (s.agreeing) verdicts.push({ target: `adaptive saves ≥ ${pct(TARGET_SAVED)} of model calls, same answer (${s.name})`, measured: `${pct(saved)} saved, answer ${same ? "same" : "DIFFERENT"}`, met: saved >= TARGET_SAVED && same });
    else verdicts.push({ target: `adaptive keeps the answer when rollouts disagree (${s.name})`, measured: `${pct(saved)} saved, answer ${same ? "same" : "DIFFERENT"}`, met: same });
    ctx.log(`adaptive: ${s.name}: ${off.usage.llmCalls} → ${on.usage.llmCalls} model calls`);
  }
  const body = [
    `k = ${K}, the long case with one image and ${dedupeOnly.usage.searchCalls} searches (whose ${evidenceCalls(dedupeOnly.usage)} evidence-graph model calls — TextDoctor, ImageDoctor, image check, query planner, analyses — adaptive sampling cannot save), L = 0. "saved" is 1 − model calls with adaptive ÷ model calls without (searches are the same in both and not counted). The "rollout + refine calls" column restricts the count to the stages adaptive sampling acts on (${REFINE_AGENTS.join(", ")}).`,
    "",
    table(["scenario", "kind", "rollouts off → on", "model calls off", "model calls on", "saved", "rollout + refine calls", "answer off / on", "same answer"], rows),
    "",
    reading({ neither: neither.usage.llmCalls, dedupeOnly: dedupeOnly.usage.llmCalls, both: both.usage.llmCalls, bothSaved, bothSame, evidenceCalls: evidenceCalls(dedupeOnly.usage) }),
  ].join("\n");
  return { id: "adaptive", title: "Adaptive rollouts", command: `npm run bench -- --only adaptive${ctx.argsNote}`, body, verdicts, seconds: (Date.now() - started) / 1000 };
}
