import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Pipeline, pipelineOptions } from "../../src/core/workflow/pipeline.js";
import { openStore } from "../../src/server/store/open-store.js";
import type { ResponseCache } from "../../src/core/llm/model-client.js";
import type { BenchContext } from "../harness/context.js";
import { benchCase, type CaseShape } from "../harness/cases.js";
import { distinctScenario } from "../harness/bench-scenario.js";
import { fmt, table, yesNo, type SectionReport } from "../harness/report.js";

const CASES: Array<{ id: string; shape: CaseShape }> = [
  { id: "long-1img", shape: { length: "long", images: 1 } },
  { id: "short-1img", shape: { length: "short", images: 1 } },
  { id: "long-0img", shape: { length: "long", images: 0 } },
];

/**
 * The response cache in the case store (SQLite here): the same cases run twice, and the
 * second run's provider calls counted, for MEDMMV_CACHE=deterministic (temperature-0
 * calls only) and MEDMMV_CACHE=all.
 */
export async function responseCache(ctx: BenchContext): Promise<SectionReport> {
  const started = Date.now();
  await ctx.servers.setLatency(0);
  await ctx.servers.setScenario(distinctScenario({ B: 1 }));
  const rows: Array<Array<string | number>> = [];
  const verdicts = [];
  const reruns: Array<{ mode: "deterministic" | "all"; calls: number; temp0: number; hits: number }> = [];
  for (const mode of ["deterministic", "all"] as const) {
    const dir = await mkdtemp(path.join(tmpdir(), "medmmv-bench-cache-"));
    const store = await openStore({ databaseUrl: null, dataDir: dir });
    try {
      const cache: ResponseCache = { get: (k) => store.getCachedResponse(k).then((r) => r?.value ?? null), put: (k, v) => store.putCachedResponse(k, v) };
      const cfg = ctx.config({ MEDMMV_CACHE: mode });
      const pipeline = new Pipeline(cfg, { cache });
      const pass = async (round: number) => {
        await ctx.servers.reset();
        const t0 = performance.now();
        const answers: string[] = [];
        let hits = 0;
        let llm = 0;
        for (const c of CASES) {
          const { result } = await pipeline.run(benchCase(`cache-${mode}-${c.id}-${round}`, c.shape), pipelineOptions(cfg, { k: 5 }));
          answers.push(JSON.stringify(result.answer));
          hits += result.usage.cacheHits ?? 0;
          llm += result.usage.llmCalls;
        }
        const s = await ctx.servers.stats();
        return { wall: performance.now() - t0, calls: s.model.total, temp0: s.model.temperatures.filter((t) => t === 0).length, hits, llm, answers };
      };
      const cold = await pass(1);
      const warm = await pass(2);
      const same = JSON.stringify(cold.answers) === JSON.stringify(warm.answers);
      reruns.push({ mode, calls: warm.calls, temp0: warm.temp0, hits: warm.hits });
      for (const [label, p] of [["first run", cold], ["re-run", warm]] as const)
        rows.push([`MEDMMV_CACHE=${mode}`, label, p.calls, p.temp0, p.calls - p.temp0, p.hits, fmt(p.wall, 0), label === "re-run" ? yesNo(same) : ""]);
      const target = mode === "deterministic" ? warm.temp0 === 0 : warm.calls === 0;
      verdicts.push({
        target: mode === "deterministic" ? "re-run with MEDMMV_CACHE=deterministic: no temperature-0 call paid twice" : "re-run with MEDMMV_CACHE=all: no model call at all",
        measured: `${warm.calls} calls (${warm.temp0} at temperature 0) of ${cold.calls}; ${warm.hits} cache hits; answers ${same ? "same" : "DIFFERENT"}`,
        met: target && same,
      });
      ctx.log(`response cache (${mode}): ${cold.calls} → ${warm.calls} calls`);
    } finally {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  }
  const body = [
    `Three cases (long with one image, short with one image, long without images), k = 5 distinct rollouts, each run twice through one pipeline whose response cache is the SQLite case store (\`openStore\` in a temporary directory), L = 0. Calls are those the scripted model server received, by temperature (rollouts sample at 0.7; every judge call is at 0). Cache hits are the result's \`usage.cacheHits\`. Case ids differ between the runs: the cache key is the model, the messages and the parameters, not the case id.`,
    "",
    table(["cache mode", "run", "model calls", "at temperature 0", "sampled (0.7)", "cache hits", "wall ms", "same answers"], rows),
    "",
    reruns
      .map((r) =>
        r.mode === "deterministic"
          ? `With \`deterministic\` the re-run made ${r.calls} model calls (${r.calls - r.temp0} sampled at 0.7, ${r.temp0} at temperature 0) and ${r.hits} cache hits: ${r.temp0 === 0 ? "only the sampled rollouts are paid again, and because the scripted model answers them the same way, every call after them was a hit" : `${r.temp0} temperature-0 calls were paid again besides the sampled rollouts, so not every call after them was a hit`}. Against a live model re-sampled rollouts may differ, and the calls that depend on them are then new calls.`
          : `With \`all\`, sampled calls are cached too: the re-run made ${r.calls} model calls and ${r.hits} cache hits.`,
      )
      .join(" "),
  ].join("\n");
  return { id: "response-cache", title: "Response cache", command: `npm run bench -- --only response-cache${ctx.argsNote}`, body, verdicts, seconds: (Date.now() - started) / 1000 };
}
