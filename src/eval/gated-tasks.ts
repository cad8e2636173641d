import type { AimdGate } from "./throttle.js";

/**
 * Start each task as soon as the gate has room, in order, until the signal fires; then wait
 * for every started task. A task that throws (a results write failed: disk full, folder gone)
 * means nothing more can be recorded: `onFatal` is called (to abort the rest) and the first
 * such error is returned once everything has ended, for the caller to raise after closing its files.
 */
export async function runGated<T>(tasks: readonly T[], gate: AimdGate, signal: AbortSignal, run: (task: T) => Promise<void>, onFatal: () => void): Promise<unknown> {
  let fatal: unknown = null;
  const running = new Set<Promise<void>>();
  for (const t of tasks) {
    if (signal.aborted) break;
    try {
      await gate.acquire(signal);
    } catch {
      break;
    }
    const p: Promise<void> = run(t)
      .catch((err: unknown) => {
        fatal ??= err;
        onFatal();
      })
      .finally(() => {
        gate.release();
        running.delete(p);
      });
    running.add(p);
  }
  await Promise.all([...running]);
  return fatal;
}
