import { Pipeline, pipelineOptions } from "../../src/core/workflow/pipeline.js";
import { cotMethod } from "../../src/eval/methods/cot.js";
import type { Usage } from "../../src/core/contracts/diagnosis-result.js";
import type { BenchContext } from "../harness/context.js";
import { benchCase, type CaseShape } from "../harness/cases.js";
import { DISTINCT_ANSWERS, distinctScenario } from "../harness/bench-scenario.js";
import { fmt, span, table, type SectionReport } from "../harness/report.js";

const SHAPES: Array<{ label: string; shape: CaseShape }> = [
  { label: "long case, one image", shape: { length: "long", images: 1 } },
  { label: "short case, no image", shape: { length: "short", images: 0 } },
];

/**
 * What the method costs against a single chain-of-thought call on the same case: model
 * calls and prompt/completion tokens per case, from each run's own usage (the tokens the
 * scripted server reported in its replies). The paper puts MedMMV at about 12× CoT.
 */
export async function costVsCot(ctx: BenchContext): Promise<SectionReport> {
  const started = Date.now();
  await ctx.servers.setLatency(0);
  await ctx.servers.setScenario(distinctScenario({ B: 1 }));
  const cfg = ctx.config();
  const pipeline = new Pipeline(cfg);
  const cot = cotMethod({ llm: pipeline.llm, prompts: pipeline.prompts, search: pipeline.search }, cfg.llm.prices);
  const rows: Array<Array<string | number>> = [];
  const ratios: string[] = [];
  const longPairs: number[] = [];
  for (const { label, shape } of SHAPES) {
    const id = label.replace(/\W+/g, "-");
    const full = (await pipeline.run(benchCase(`cost-${id}`, shape), pipelineOptions(cfg, { k: 5, maxRepairs: 3 }))).result.usage;
    const one = await cot.run(benchCase(`cost-cot-${id}`, shape), new AbortController().signal);
    if (shape.length === "long") longPairs.push(full.byAgent["web-search"]?.calls ?? 0);
    if (one.status !== "completed") throw new Error(`cot on ${label} ended ${one.status}`);
    const c: Usage = one.usage;
    const x = (a: number, b: number) => (b > 0 ? `${fmt(a / b, 1)}×` : "–");
    rows.push([label, `${full.llmCalls} + ${full.searchCalls} searches`, c.llmCalls, `**${x(full.llmCalls, c.llmCalls)}**`, full.promptTokens, c.promptTokens, `**${x(full.promptTokens, c.promptTokens)}**`, full.completionTokens, c.completionTokens, `**${x(full.completionTokens, c.completionTokens)}**`]);
    ratios.push(`${label}: ${x(full.llmCalls, c.llmCalls)} the calls, ${x(full.promptTokens + full.completionTokens, c.promptTokens + c.completionTokens)} the tokens`);
  }
  const body = [
    `k = 5 rollouts with distinct reasoning (answers ${DISTINCT_ANSWERS.join(", ")}; the B path repaired once), ${span(longPairs)} search pairs on the long case, the default maxRepairs 3, against \`--method cot\` (one executor call) on the same case. Tokens are the \`usage\` of each model reply as the scripted server reports it (it counts about four characters a token; image parts are not counted), summed by the pipeline's own usage meter. Searches are not model calls and carry no tokens.`,
    "",
    table(["case", "MedMMV model calls", "CoT calls", "calls ×", "MedMMV prompt tokens", "CoT prompt tokens", "prompt ×", "MedMMV completion tokens", "CoT completion tokens", "completion ×"], rows),
    "",
    `Per case, MedMMV against CoT: ${ratios.join("; ")}.`,
  ].join("\n");
  return { id: "cost-vs-cot", title: "Cost against chain of thought", command: `npm run bench -- --only cost-vs-cot${ctx.argsNote}`, body, verdicts: [], seconds: (Date.now() - started) / 1000 };
}
