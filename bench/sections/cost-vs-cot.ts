import { Pipeline, pipelineOptions } from "../../src/core/workflow/pipeline.js";
import { cotMethod } from "../../src/eval/methods/cot.js";
import type { Usage } from "../../src/core/contracts/diagnosis-result.js";
import type { Prices } from "../../src/core/config.js";
import { callCostUsd } from "../../src/core/llm/usage.js";
import type { BenchContext } from "../harness/context.js";
import { benchCase, type CaseShape } from "../harness/cases.js";
import { DISTINCT_ANSWERS, distinctScenario } from "../harness/bench-scenario.js";
import { fmt, span, table, type SectionReport, type Verdict } from "../harness/report.js";

const SHAPES: Array<{ label: string; shape: CaseShape }> = [
  { label: "long case, one image", shape: { length: "long", images: 1 } },
  { label: "short case, no image", shape: { length: "short", images: 0 } },
];

/**
 * Two example price tables (USD per million tokens, the same for every model of the run):
 * one without a cached-input rate, one with it. Examples for the arithmetic, not quotes.
 */
const TABLES: Array<{ label: string; price: Prices[string] }> = [
  { label: "table A: $2.50 in, $10.00 out, no cached rate", price: { input: 2.5, output: 10 } },
  { label: "table B: $2.00 in, $0.50 cached in, $8.00 out", price: { input: 2, cachedInput: 0.5, output: 8 } },
];

/** The scripted server's prompt cache as vLLM's prefix caching works: no minimum length, blocks of 16 tokens. */
const PREFIX_CACHE = { minPromptTokens: 0, blockTokens: 16 };

const x = (a: number, b: number) => (b > 0 ? `${fmt(a / b, 1)}×` : "–");
const usd = (v: number) => `$${v.toFixed(4)}`;
const costAt = (price: Prices[string], u: Usage) => callCostUsd(price, u.promptTokens, u.cachedPromptTokens ?? 0, u.completionTokens);

/**
 * What the method costs against a single chain-of-thought call on the same case: model
 * calls and prompt/completion tokens per case, from each run's own usage (the tokens the
 * scripted server reported in its replies), then for k = 1, 3, 5 the prompt tokens outside
 * a prefix already sent (the server's simulated prompt cache), image bytes and dollars at
 * two example price tables. The paper puts MedMMV at about 12× CoT.
 */
export async function costVsCot(ctx: BenchContext): Promise<SectionReport> {
  const started = Date.now();
  await ctx.servers.setLatency(0);
  await ctx.servers.setScenario({ ...distinctScenario({ B: 1 }), promptCache: PREFIX_CACHE });
  // The pipeline prices its own calls at table B: its costUsd is checked against the arithmetic below.
  const tableB = TABLES[1]!.price;
  const cfg = ctx.config({ MEDMMV_PRICES: JSON.stringify(pricesForModels(ctx, tableB)) });
  const pipeline = new Pipeline(cfg);
  const cot = cotMethod({ llm: pipeline.llm, prompts: pipeline.prompts, search: pipeline.search }, cfg.llm.prices);
  const rows: Array<Array<string | number>> = [];
  const costRows: Array<Array<string | number>> = [];
  const ratios: string[] = [];
  const longPairs: number[] = [];
  const verdicts: Verdict[] = [];
  for (const { label, shape } of SHAPES) {
    const id = label.replace(/\W+/g, "-");
    // Each case on a fresh cache: nothing of another case counts as already sent.
    await ctx.servers.reset();
    const one = await cot.run(benchCase(`cost-cot-${id}`, shape), new AbortController().signal);
    if (one.status !== "completed") throw new Error(`cot on ${label} ended ${one.status}`);
    const c: Usage = one.usage;
    for (const k of [1, 3, 5]) {
      await ctx.servers.reset();
      const full = (await pipeline.run(benchCase(`cost-${id}-k${k}`, shape), pipelineOptions(cfg, { k, maxRepairs: 3 }))).result.usage;
      const own = costAt(tableB, full);
      if (Math.abs(own - full.costUsd) > 1e-5) throw new Error(`cost-vs-cot: the pipeline's costUsd ${full.costUsd} differs from the calls' cost ${own}`);
      const outside = full.promptTokens - (full.cachedPromptTokens ?? 0);
      costRows.push([
        label,
        k,
        full.llmCalls,
        full.promptTokens,
        `**${x(full.promptTokens, c.promptTokens)}**`,
        outside,
        `**${x(outside, c.promptTokens)}**`,
        fmt((full.imageBytes ?? 0) / 1024, 1),
        usd(costAt(TABLES[0]!.price, full)),
        usd(full.costUsd),
        `${x(costAt(TABLES[0]!.price, full), costAt(TABLES[0]!.price, c))} / ${x(full.costUsd, costAt(tableB, c))}`,
      ]);
      if (k !== 5) continue;
      if (shape.length === "long") {
        longPairs.push(full.byAgent["web-search"]?.calls ?? 0);
        const r = outside / c.promptTokens;
        verdicts.push({ target: "prompt tokens outside a prefix already sent ≤ 12× CoT (long case, one image, k = 5)", measured: `${fmt(r, 1)}× (${outside} of ${full.promptTokens} ÷ ${c.promptTokens})`, met: r <= 12 });
      }
      rows.push([label, `${full.llmCalls} + ${full.searchCalls} searches`, c.llmCalls, `**${x(full.llmCalls, c.llmCalls)}**`, full.promptTokens, c.promptTokens, `**${x(full.promptTokens, c.promptTokens)}**`, full.completionTokens, c.completionTokens, `**${x(full.completionTokens, c.completionTokens)}**`]);
      ratios.push(`${label}: ${x(full.llmCalls, c.llmCalls)} the calls, ${x(full.promptTokens + full.completionTokens, c.promptTokens + c.completionTokens)} the tokens`);
    }
  }
  const body = [
    `k = 5 rollouts with distinct reasoning (answers ${DISTINCT_ANSWERS.join(", ")}; the B path repaired once), ${span(longPairs)} search pairs on the long case, the default maxRepairs 3, against \`--method cot\` (one executor call) on the same case. Tokens are the \`usage\` of each model reply as the scripted server reports it (it counts about four characters a token; image parts are not counted), summed by the pipeline's own usage meter. Searches are not model calls and carry no tokens.`,
    "",
    table(["case", "MedMMV model calls", "CoT calls", "calls ×", "MedMMV prompt tokens", "CoT prompt tokens", "prompt ×", "MedMMV completion tokens", "CoT completion tokens", "completion ×"], rows),
    "",
    `Per case, MedMMV against CoT: ${ratios.join("; ")}.`,
    "",
    `**What a case costs, by k.** The scripted server simulates a provider's prompt cache from the prompts it received since the case began (\`src/scripted/prompt-cache.ts\`, as vLLM's prefix caching: no minimum length, blocks of ${PREFIX_CACHE.blockTokens} tokens) and reports \`usage.prompt_tokens_details.cached_tokens\` as OpenAI does; the pipeline reads it into \`usage.cachedPromptTokens\`. "Outside a prefix" is prompt tokens minus those: what a provider processes anew. Image KiB is \`usage.imageBytes\` (every call's images, decoded). Dollars: ${TABLES.map((t) => t.label).join("; ")} — example rates for the arithmetic, USD per million tokens, the same for every model; table B is the pipeline's own \`usage.costUsd\` (a consistency check recomputes it from the case's token totals and stops the run if they differ; the call-by-call check by hand is \`test/core/llm/prompt-cost.test.ts\`), table A the same tokens at A's rates. The CoT call (one call on an empty cache: nothing cached) is priced the same way.`,
    "",
    table(["case", "k", "model calls", "prompt tokens", "prompt ÷ CoT", "outside a prefix", "outside ÷ CoT", "image KiB", "cost A", "cost B", "cost ÷ CoT (A / B)"], costRows),
  ].join("\n");
  return { id: "cost-vs-cot", title: "Cost against chain of thought", command: `npm run bench -- --only cost-vs-cot${ctx.argsNote}`, body, verdicts, seconds: (Date.now() - started) / 1000 };
}

/** The same price for whatever model names the bench config uses. */
function pricesForModels(ctx: BenchContext, price: Prices[string]): Prices {
  const models = Object.values(ctx.config().llm.models).filter((m): m is string => m !== null);
  return Object.fromEntries(models.map((m) => [m, price]));
}
