import { describe, expect, it } from "vitest";
import { FairLimiter } from "../../../src/core/llm/limiter.js";

/** A call whose completion the test controls. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { open, opened };
}

const tick = () => new Promise<void>((r) => setImmediate(r));

describe("FairLimiter", () => {
  it("serves a small case within a bounded number of grants while a large case has 50 queued", async () => {
    const limiter = new FairLimiter(2);
    const order: string[] = [];
    const gates = new Map<string, ReturnType<typeof gate>>();
    const call = (key: string, i: number) => {
      const id = `${key}${i}`;
      const g = gate();
      gates.set(id, g);
      return limiter.run(key, undefined, async () => {
        order.push(id);
        await g.opened;
      });
    };
    // The large case queues everything first; the small case arrives after.
    const big = Array.from({ length: 50 }, (_, i) => call("big", i));
    await tick();
    expect(limiter.active).toBe(2);
    expect(limiter.waiting).toBe(48);
    const small = [call("small", 0), call("small", 1)];
    // Complete calls one by one in the order they were granted.
    for (let served = 0; served < order.length; served++) {
      gates.get(order[served]!)!.open();
      await tick();
    }
    await Promise.all([...big, ...small]);
    expect(order).toHaveLength(52);
    // Round-robin between the two cases: each small call is granted within two grants
    // of a slot freeing up (a FIFO limiter would serve them at positions 51 and 52).
    const firstSmall = order.indexOf("small0");
    const secondSmall = order.indexOf("small1");
    expect(firstSmall).toBeLessThanOrEqual(2 + 1);
    expect(secondSmall).toBeLessThanOrEqual(2 + 3);
    // Within one case, calls keep their arrival order.
    const bigOrder = order.filter((x) => x.startsWith("big")).map((x) => Number(x.slice(3)));
    expect(bigOrder).toEqual([...bigOrder].sort((a, b) => a - b));
    expect(limiter.peakActive).toBe(2);
  });

  it("shares slots evenly between several busy cases", async () => {
    const limiter = new FairLimiter(1);
    const order: string[] = [];
    const hold = gate();
    const first = limiter.run("warm", undefined, () => hold.opened);
    const runs: Array<Promise<void>> = [];
    for (const key of ["a", "b", "c"]) for (let i = 0; i < 4; i++) runs.push(limiter.run(key, undefined, async () => void order.push(key)));
    hold.open();
    await Promise.all([first, ...runs]);
    expect(order).toEqual(["a", "b", "c", "a", "b", "c", "a", "b", "c", "a", "b", "c"]);
  });

  it("drops an aborted waiting call without running it, and keeps serving the rest", async () => {
    const limiter = new FairLimiter(1);
    const hold = gate();
    const ran: string[] = [];
    const running = limiter.run("x", undefined, async () => {
      ran.push("first");
      await hold.opened;
    });
    const ctrl = new AbortController();
    const aborted = limiter.run("y", ctrl.signal, async () => void ran.push("aborted"));
    const later = limiter.run("z", undefined, async () => void ran.push("later"));
    await tick();
    expect(limiter.waiting).toBe(2);
    ctrl.abort(new Error("case cancelled"));
    await expect(aborted).rejects.toThrow("case cancelled");
    expect(limiter.waiting).toBe(1);
    hold.open();
    await Promise.all([running, later]);
    expect(ran).toEqual(["first", "later"]);
    expect(limiter.active).toBe(0);
    expect(limiter.waiting).toBe(0);
  });

  it("rejects at once when the signal is already aborted", async () => {
    const limiter = new FairLimiter(1);
    const hold = gate();
    const running = limiter.run("x", undefined, () => hold.opened);
    const ctrl = new AbortController();
    ctrl.abort(new Error("gone"));
    let ran = false;
    await expect(limiter.run("y", ctrl.signal, async () => void (ran = true))).rejects.toThrow("gone");
    expect(ran).toBe(false);
    expect(limiter.waiting).toBe(0);
    hold.open();
    await running;
  });

  it("never runs more than the limit at once, releases slots on errors, and finishes every call", async () => {
    const limit = 3;
    const limiter = new FairLimiter(limit);
    let now = 0;
    let max = 0;
    let done = 0;
    // Deterministic pseudo-random durations and failures across five cases.
    let s = 7;
    const rand = () => ((s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const calls = Array.from({ length: 60 }, (_, i) =>
      limiter
        .run(`case-${i % 5}`, undefined, async () => {
          now++;
          max = Math.max(max, now);
          try {
            await new Promise((r) => setTimeout(r, Math.floor(rand() * 4)));
            if (rand() < 0.2) throw new Error("provider failed");
          } finally {
            now--;
          }
        })
        .then(
          () => void done++,
          () => void done++,
        ),
    );
    await Promise.all(calls);
    expect(done).toBe(60);
    expect(max).toBe(limit); // reached, never exceeded
    expect(limiter.peakActive).toBe(limit);
    expect(limiter.active).toBe(0);
    expect(limiter.waiting).toBe(0);
  });
});

describe("FairLimiter inside a shared budget", () => {
  /** A budget of `slots` calls shared with other processes (here: held by the test). */
  function budget(slots: number) {
    let free = slots;
    const waiting: Array<() => void> = [];
    const pauses: number[] = [];
    return {
      pauses,
      get free() {
        return free;
      },
      acquire(): Promise<() => void> {
        const grant = (resolve: (r: () => void) => void) => {
          free--;
          resolve(() => {
            free++;
            waiting.shift()?.();
          });
        };
        return new Promise((resolve) => (free > 0 ? grant(resolve) : waiting.push(() => grant(resolve))));
      },
      pause(ms: number) {
        pauses.push(ms);
      },
    };
  }

  it("a call that got its turn here still waits for a slot of the shared budget", async () => {
    const shared = budget(1);
    const limiter = new FairLimiter(4, shared);
    let running = 0;
    let peak = 0;
    const call = () =>
      limiter.run("case", undefined, async () => {
        running++;
        peak = Math.max(peak, running);
        await new Promise((r) => setTimeout(r, 5));
        running--;
      });
    await Promise.all([call(), call(), call()]);
    expect(peak).toBe(1);
    expect(shared.free).toBe(1);
  });

  it("a 429 with Retry-After is passed on to the shared budget; one without it is not", () => {
    const shared = budget(1);
    const limiter = new FairLimiter(4, shared);
    limiter.noteRateLimited(1_500);
    limiter.noteRateLimited(null);
    limiter.noteRateLimited();
    expect(shared.pauses).toEqual([1_500]);
  });
});
