import { setMaxListeners } from "node:events";
import { ProgressReporter, type ProgressSink, type ProgressState } from "./progress.js";
import { AimdGate } from "./throttle.js";

/** What an eval session is started with (the parts of the runners' deps it reads). */
export interface RunSessionDeps {
  signal?: AbortSignal;
  progress?: ProgressSink | null;
  progressIntervalMs?: number;
  throttleCooldownMs?: number;
}

/**
 * The moving parts every eval session shares — the item runner and the conversation eval
 * alike: the progress counters (resumed records counted in), the AIMD concurrency gate, the
 * progress display, and one abort signal for all work in flight that follows the caller's.
 */
export interface RunSession<R> {
  startedAt: Date;
  /** Records a resumed run keeps (finished before, and still planned). */
  resumed: R[];
  state: ProgressState;
  gate: AimdGate;
  progress: ProgressReporter | null;
  signal: AbortSignal;
  abort(): void;
  /** Stops following the caller's signal and the progress display. */
  end(): void;
}

export function openRunSession<R extends { correct?: boolean | null }>(o: { planned: Set<string>; done: Map<string, R>; concurrency: number; deps: RunSessionDeps }): RunSession<R> {
  const { deps } = o;
  const startedAt = new Date();
  const resumed = [...o.done.entries()].filter(([k]) => o.planned.has(k)).map(([, r]) => r);
  const state: ProgressState = { total: o.planned.size, resumed: resumed.length, done: 0, correct: resumed.filter((r) => r.correct).length, failed: 0, tokens: 0, costUsd: 0, elapsedMs: 0 };
  const gate = new AimdGate(o.concurrency, { cooldownMs: deps.throttleCooldownMs ?? 2000 });
  const progress = deps.progress ? new ProgressReporter(deps.progress, () => ({ ...state, elapsedMs: Date.now() - startedAt.getTime(), concurrency: gate.current }), { intervalMs: deps.progressIntervalMs }) : null;
  const ctrl = new AbortController();
  const onOuterAbort = () => ctrl.abort(deps.signal?.reason);
  if (deps.signal?.aborted) ctrl.abort();
  deps.signal?.addEventListener("abort", onOuterAbort, { once: true });
  // Everything in flight (and its pipeline) listens on this one signal: many listeners are by design.
  setMaxListeners(0, ctrl.signal);
  return {
    startedAt,
    resumed,
    state,
    gate,
    progress,
    signal: ctrl.signal,
    abort: () => ctrl.abort(),
    end() {
      deps.signal?.removeEventListener("abort", onOuterAbort);
      progress?.stop();
    },
  };
}
