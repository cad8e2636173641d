import { describe, expect, it } from "vitest";
import { runGated } from "../../src/eval/gated-tasks.js";
import { AimdGate } from "../../src/eval/throttle.js";

/** A promise and the function that settles it. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe("runGated", () => {
  it("a task that releases its slot lets the next start while it finishes its bookkeeping", async () => {
    const gate = new AimdGate(1);
    const started: number[] = [];
    const bookkeeping = [deferred(), deferred()];
    const secondStarted = deferred();
    const done = runGated([0, 1], gate, new AbortController().signal, async (t, release) => {
      started.push(t);
      if (t === 1) secondStarted.resolve();
      release();
      release(); // a second call gives back nothing more
      await bookkeeping[t]!.promise;
    }, () => undefined);
    await secondStarted.promise;
    // Task 0 is still writing, yet task 1 runs: one slot, handed over at release.
    expect(started).toEqual([0, 1]);
    expect(gate.active).toBe(0);
    bookkeeping[0]!.resolve();
    bookkeeping[1]!.resolve();
    expect(await done).toBeNull();
    expect(gate.active).toBe(0);
  });

  it("without a release the slot is held until the task ends", async () => {
    const gate = new AimdGate(1);
    const started: number[] = [];
    const first = deferred();
    const done = runGated([0, 1], gate, new AbortController().signal, async (t) => {
      started.push(t);
      if (t === 0) await first.promise;
    }, () => undefined);
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual([0]);
    expect(gate.active).toBe(1);
    first.resolve();
    expect(await done).toBeNull();
    expect(started).toEqual([0, 1]);
    expect(gate.active).toBe(0);
  });
});
