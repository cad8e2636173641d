import type { AgentDeps } from "../core/agents/agent-context.js";
import { runRater } from "./agents/rater.js";
import type { Usage } from "../core/contracts/diagnosis-result.js";
import type { PreparedCase } from "../core/contracts/clinical-case.js";
import type { Config } from "../core/config.js";
import { describeError, MedmmvError } from "../core/contracts/errors.js";
import type { FairLimiter } from "../core/llm/limiter.js";
import { LlmClient } from "../core/llm/model-client.js";
import { CallChain, UsageMeter } from "../core/llm/usage.js";
import { rel, txi } from "../core/scoring/reliability.js";
import type { GoldAnswer } from "./datasets/types.js";
import type { RecordRating } from "./results-file.js";

export interface Rater {
  model: string;
  deps: AgentDeps;
}

/**
 * One rater per model name, on the configured endpoint: a client whose judge role is that
 * model, sharing the process-wide limiter (ratings count against the same provider budget).
 * Ratings are never cached: a rater model is the thing under test here.
 */
export function buildRaters(config: Config, base: Omit<AgentDeps, "llm">, limiter: FairLimiter, models: readonly string[]): Rater[] {
  return models.map((model) => ({
    model,
    deps: { ...base, llm: new LlmClient({ ...config.llm, models: { executor: model, vision: model, judge: model } }, limiter, null) },
  }));
}

export function goldText(g: GoldAnswer): string {
  return g.kind === "choice" && g.option ? `(${g.option}) ${g.text}` : g.text;
}

/** Every rater scores the output; a rater that fails is recorded and the others still count. */
export async function rateOutput(
  raters: readonly Rater[],
  c: PreparedCase,
  output: string,
  gold: GoldAnswer,
  prices: Config["llm"]["prices"],
  signal: AbortSignal,
): Promise<{ ratings: RecordRating[]; errors: Array<{ rater: string; code: string; message: string }>; usage: Usage }> {
  const started = Date.now();
  const meter = new UsageMeter(prices);
  const hasImages = c.images.length > 0;
  const settled = await Promise.all(
    raters.map(async (r) => {
      try {
        const s = await runRater(r.deps, { caseKey: c.id, meter, chain: new CallChain(meter), signal }, c, { output, gold: goldText(gold) });
        // C only means something when there is an image to be consistent with (docs/architecture.md#scores).
        const consistency = hasImages ? s.consistency : null;
        const rating: RecordRating = {
          rater: r.model,
          truthfulness: s.truthfulness,
          informativeness: s.informativeness,
          consistency,
          txi: txi(s.truthfulness, s.informativeness),
          rel: rel({ truthfulness: s.truthfulness, informativeness: s.informativeness, consistency }),
        };
        return { ok: true as const, rating };
      } catch (err) {
        if (signal.aborted) throw err instanceof MedmmvError ? err : new MedmmvError("ABORTED", "eval cancelled", { cause: err });
        return { ok: false as const, error: { rater: r.model, ...describeError(err) } };
      }
    }),
  );
  return {
    ratings: settled.flatMap((s) => (s.ok ? [s.rating] : [])),
    errors: settled.flatMap((s) => (s.ok ? [] : [s.error])),
    usage: meter.snapshot(Date.now() - started),
  };
}
