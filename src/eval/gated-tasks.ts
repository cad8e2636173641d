import type { AimdGate } from "./throttle.js";
import type { Admission } from "./run-budget.js";

/**
 * Start each task as soon as the gate has room, in order, until the signal fires; then wait
 * for every started task. A task that throws (a results write failed: disk full, folder gone)
 * means nothing more can be recorded: `onFatal` is called (to abort the rest) and the first
 * such error is returned once everything has ended, for the caller to raise after closing its files.
 * `admit` (a spending limit) is asked before each start: "wait" holds the start until a task in
 * flight has ended and asks again; "stop" starts nothing more (what runs still finishes).
 */
export async function runGated<T>(
  tasks: readonly T[],
  gate: AimdGate,
  signal: AbortSignal,
  run: (task: T) => Promise<void>,
  onFatal: () => void,
  admit: () => Admission = () => "start",
): Promise<unknown> {
  let fatal: unknown = null;
  const running = new Set<Promise<void>>();
  for (const t of tasks) {
    if (signal.aborted) break;
    try {
      await gate.acquire(signal);
    } catch {
      break;
    }
    let admission = admit();
    while (admission === "wait" && running.size > 0 && !signal.aborted) {
      await Promise.race(running);
      admission = admit();
    }
    if (admission === "stop" || signal.aborted) {
      gate.release();
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
