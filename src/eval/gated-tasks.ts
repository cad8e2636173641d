import type { AimdGate } from "./throttle.js";
import type { Admission } from "./run-budget.js";

/**
 * Start each task as soon as the gate has room, in order, until the signal fires; then wait
 * for every started task. A task that throws (a results write failed: disk full, folder gone)
 * means nothing more can be recorded: `onFatal` is called (to abort the rest) and the first
 * such error is returned once everything has ended, for the caller to raise after closing its files.
 * `admit` (a spending limit) is asked before each start: "wait" holds the start until a task in
 * flight has ended and asks again; "stop" starts nothing more (what runs still finishes).
 * A task may call `release` once its own work is done and only bookkeeping is left (writing
 * its record): the next task starts then instead of waiting for the disk.
 */
export async function runGated<T>(
  tasks: readonly T[],
  gate: AimdGate,
  signal: AbortSignal,
  run: (task: T, release: () => void) => Promise<void>,
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
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      gate.release();
    };
    const p: Promise<void> = run(t, release)
      .catch((err: unknown) => {
        fatal ??= err;
        onFatal();
      })
      .finally(() => {
        release();
        running.delete(p);
      });
    running.add(p);
  }
  await Promise.all([...running]);
  return fatal;
}
