/**
 * The decode pool and the case's abort: an object waiting for a thread leaves the queue
 * unserved, and one being decoded has its thread ended, so a refused or cancelled case stops
 * decoding at once rather than after the object's time limit.
 */
import { describe, expect, it } from "vitest";
import { decodePoolSize, withDecodeWorker } from "../../../../src/core/intake/dicom/decode-pool.js";

describe("the decode pool stops work for an aborted case", () => {
  it("a job waiting for a thread is dropped from the queue, its work never run", async () => {
    // Hold every thread (the default pool has 2) until released.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const holders = [0, 1].map(() => withDecodeWorker("holder", () => held));
    const ctrl = new AbortController();
    let ran = false;
    const waiting = withDecodeWorker(
      "other",
      async () => {
        ran = true;
      },
      ctrl.signal,
    );
    ctrl.abort(new Error("the case was refused"));
    await expect(waiting).rejects.toThrow("the case was refused");
    release();
    await Promise.all(holders);
    expect(ran).toBe(false);
  });

  it("a job being decoded has its thread ended and its question fails with the abort's reason", async () => {
    const ctrl = new AbortController();
    // An idle thread, if any, takes the job; it is retired with it.
    const before = decodePoolSize();
    const job = withDecodeWorker(
      "t",
      async (lease) => {
        // A question the thread is still answering when the abort comes (a header of garbage takes a moment to fail; either way the abort wins).
        const pending = lease.ask({ id: 1, op: "header", bytes: new ArrayBuffer(16), attributes: [] });
        ctrl.abort(new Error("cancelled"));
        return pending;
      },
      ctrl.signal,
    );
    await expect(job).rejects.toThrow("cancelled");
    // The thread was retired: none is left holding the aborted object.
    expect(decodePoolSize()).toBe(Math.max(0, before - 1));
  });

  it("an already aborted signal runs nothing", async () => {
    const ctrl = new AbortController();
    ctrl.abort(new Error("already"));
    let ran = false;
    await expect(withDecodeWorker("t", async () => void (ran = true), ctrl.signal)).rejects.toThrow("already");
    expect(ran).toBe(false);
  });
});
