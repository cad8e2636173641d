import { Pipeline, pipelineOptions } from "../../src/core/workflow/pipeline.js";
import type { Usage } from "../../src/core/contracts/diagnosis-result.js";
import type { BenchContext } from "../harness/context.js";
import type { ChildStats } from "../harness/servers.js";
import { benchCase, type CaseShape } from "../harness/cases.js";
import { DISTINCT_ANSWERS, distinctScenario } from "../harness/bench-scenario.js";
import { kib, pct, table, type SectionReport } from "../harness/report.js";

const AGENTS = ["rollout", "text-doctor", "image-doctor", "image-hd", "image-revise", "web-search-query", "web-search", "web-search-analysis", "hd-supervisor", "auto-repair", "coherence-judge"];

interface Row {
  label: string;
  usage: Usage;
  prompts: ChildStats["promptByAgent"];
}

const calls = (u: Usage, a: string) => u.byAgent[a]?.calls ?? 0;
const text = (r: Row, a: string) => r.prompts[a]?.textChars ?? 0;
const image = (r: Row, a: string) => r.prompts[a]?.imageChars ?? 0;
const totalText = (r: Row) => Object.values(r.prompts).reduce((n, a) => n + a.textChars, 0);
const totalImage = (r: Row) => Object.values(r.prompts).reduce((n, a) => n + a.imageChars, 0);
const reused = (r: Row, a: string) => r.prompts[a]?.reusedPrefixChars ?? 0;
const totalReused = (r: Row) => Object.values(r.prompts).reduce((n, a) => n + a.reusedPrefixChars, 0);
const fresh = (r: Row, a: string) => r.prompts[a]?.newLineChars ?? 0;
const totalFresh = (r: Row) => Object.values(r.prompts).reduce((n, a) => n + a.newLineChars, 0);

/**
 * Calls and prompt bytes per case, by agent, and how they grow with k, the number of
 * images and the length of the case. Calls come from the result's `usage.byAgent`; prompt
 * sizes from what the scripted server received (see the note in the body). L = 0.
 */
export async function callsGrowth(ctx: BenchContext): Promise<SectionReport> {
  const started = Date.now();
  await ctx.servers.setLatency(0);
  // Distinct reasoning, so every rollout is refined (the most calls dedupe allows).
  await ctx.servers.setScenario({ ...distinctScenario({ B: 1 }), countPrefixReuse: true });
  const cfg = ctx.config();
  const pipeline = new Pipeline(cfg);
  const run = async (label: string, k: number, shape: CaseShape): Promise<Row> => {
    await ctx.servers.reset();
    const { result } = await pipeline.run(benchCase(`growth-${label.replace(/\W+/g, "-")}`, shape), pipelineOptions(cfg, { k }));
    if (result.status !== "completed") throw new Error(`calls-growth case ${label} ended ${result.status}`);
    const stats = await ctx.servers.stats();
    if (stats.model.total !== result.usage.llmCalls) throw new Error(`calls-growth: server saw ${stats.model.total} calls, usage says ${result.usage.llmCalls}`);
    // The pipeline's own prompt size per agent (UsageMeter, in the result) must match what the server received.
    for (const [agent, p] of Object.entries(stats.promptByAgent)) {
      const own = result.usage.byAgent[agent]?.promptChars ?? 0;
      if (own !== p.textChars + p.imageChars) throw new Error(`calls-growth: ${agent}: the result says ${own} prompt characters, the server received ${p.textChars + p.imageChars}`);
    }
    return { label, usage: result.usage, prompts: stats.promptByAgent };
  };

  const base = await run("k = 5, long case, 1 image", 5, { length: "long", images: 1 });
  const kRows: Row[] = [];
  for (const k of [1, 3, 5, 9]) kRows.push(k === 5 ? { ...base, label: "k = 5" } : await run(`k = ${k}`, k, { length: "long", images: 1 }));
  const imgRows: Row[] = [];
  for (const images of [0, 1, 4]) imgRows.push(images === 1 ? { ...base, label: "1 image" } : await run(`${images} images`, 5, { length: "long", images }));
  const lenRows: Row[] = [await run("short notes", 5, { length: "short", images: 1 }), { ...base, label: "long notes" }];

  const agentTable = table(
    ["agent", "calls", "prompt text KiB", "image KiB", "text KiB per call", "text in a prefix already sent", "at most, any layout"],
    [
      ...AGENTS.filter((a) => calls(base.usage, a) > 0).map((a) =>
        a === "web-search" ? [a, calls(base.usage, a), "–", "–", "–", "–", "–"] : [a, calls(base.usage, a), kib(text(base, a)), kib(image(base, a)), kib(text(base, a) / calls(base.usage, a)), pct(reused(base, a) / text(base, a)), pct(1 - fresh(base, a) / text(base, a))],
      ),
      ["**total**", `**${base.usage.llmCalls + base.usage.searchCalls}** (${base.usage.llmCalls} model + ${base.usage.searchCalls} search)`, `**${kib(totalText(base))}**`, `**${kib(totalImage(base))}**`, "", `**${pct(totalReused(base) / totalText(base))}**`, `**${pct(1 - totalFresh(base) / totalText(base))}**`],
    ],
  );
  const growthTable = (rows: Row[], cols: string[]) =>
    table(
      ["case", "model calls", "searches", "prompt text KiB", "image KiB", ...cols.map((c) => `${c} calls`), "chain"],
      rows.map((r) => [r.label, r.usage.llmCalls, r.usage.searchCalls, kib(totalText(r)), kib(totalImage(r)), ...cols.map((c) => calls(r.usage, c)), r.usage.criticalPathCalls ?? 0]),
    );

  const body = [
    `Scripted rollouts with distinct reasoning (answers ${DISTINCT_ANSWERS.join(", ")} cycled), so deduplication merges nothing and every rollout path is refined; paths answering B need one repair. L = 0 (the counts do not depend on it). One case per row. Calls are the result's \`usage.byAgent[agent].calls\` (checked against the server's count). Prompt sizes are measured at the scripted server: "text" is the characters of all text parts of all messages of each call, "image" the characters of the image data URLs (each bench image is a 128×128 PNG, ≈ 66 KB as base64). "Text in a prefix already sent" is the share of an agent's prompt text that continues, character for character from the start of the system message, a prompt an earlier call of the same case sent: the part a provider's prompt cache (OpenAI's automatic caching, vLLM's prefix caching) can serve instead of processing again. Every call is laid out system · case block · evidence graph (search planner, fact-checks, repairs) · the agent's task · its reply schema · images · its variable part (a path, search results, a rollout's index), so the calls of a case share system and case, the evidence calls also the graph, and an agent's calls also its task and schema. What no layout can share is each agent's task and schema the first time it is called, the first copy of the graph, and each call's variable part. "At most, any layout" bounds what any order of the same text could reach, to within the start of a line: a prefix already sent holds only lines some earlier call carried (and may end a few characters into a new line that begins like an old one, "attempt 2" after "attempt 1"), so the characters of the lines no earlier call of the case carried (each agent's task and schema the first time, the first copy of the graph and of the search knowledge, each search result, each path) can never be served from a prompt cache, whatever the order; the column is one minus their share. Raising it would mean telling agents more or other text than they need (every agent's task in every prompt, say), which would cost more tokens than the cache saves. The result's own \`usage.byAgent[agent].promptChars\` (what the pipeline counted) is checked against the server's text + image characters for every agent of every row; the run stops if they differ.`,
    "",
    "**Per case at k = 5, long case, one image, by agent:**",
    "",
    agentTable,
    "",
    "**Growth with k** (long case, one image):",
    "",
    growthTable(kRows, ["rollout", "hd-supervisor", "coherence-judge"]),
    "",
    "**Growth with the number of images** (k = 5, long case):",
    "",
    growthTable(imgRows, ["rollout", "image-doctor", "image-hd"]),
    "",
    "**Growth with case length** (k = 5, one image; short = 2 sentences, long = 14):",
    "",
    growthTable(lenRows, ["text-doctor", "web-search-analysis"]),
    "",
    "Rollout, refinement and coherence calls grow linearly with k (one refine branch per distinct path); the evidence calls do not depend on k. Images multiply prompt bytes, not calls: every rollout, image-doctor, image-hd and auto-repair call carries all the images. A longer case gives more facts and so more search pairs, up to the cap of 8.",
  ].join("\n");
  const share = totalReused(base) / totalText(base);
  const ceiling = 1 - totalFresh(base) / totalText(base);
  const verdicts = [{ target: "prompt text in a prefix an earlier call of the case already sent ≥ 85 % (long case, one image, k = 5)", measured: `${pct(share)} (any layout of the same text: at most ${pct(ceiling)})`, met: share >= 0.85 }];
  return { id: "calls-growth", title: "Calls and prompt bytes per case", command: `npm run bench -- --only calls-growth${ctx.argsNote}`, body, verdicts, seconds: (Date.now() - started) / 1000 };
}
