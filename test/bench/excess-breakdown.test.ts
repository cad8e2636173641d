import { describe, expect, it } from "vitest";
import { excessBreakdown } from "../../bench/harness/excess-breakdown.js";

/** A case of three links at L = 200 ms, hand-timed: every part of its excess is known. */
const L = 200;
const t0 = 1_000;
const calls = [
  // Link 1: two calls, the last reaches the provider at +12 (start-up), its last reply 201 ms later.
  { start: t0 + 10, end: t0 + 211 },
  { start: t0 + 12, end: t0 + 213 },
  // Link 2: one call 7 ms after link 1's last reply; 3 ms beyond L.
  { start: t0 + 220, end: t0 + 423 },
  // Link 3: three calls; the last arrives 9 ms after link 2's reply, an earlier one ends last.
  { start: t0 + 430, end: t0 + 634 },
  { start: t0 + 431, end: t0 + 632 },
  { start: t0 + 432, end: t0 + 633 },
];

describe("excessBreakdown", () => {
  it("splits a case's excess into start-up, between links, waves beyond L and after the last reply, which add up to it", () => {
    const t1 = t0 + 640;
    const b = excessBreakdown(calls, t0, t1, L, 3)!;
    expect(b).toEqual({ waves: 3, startupMs: 12, betweenLinksMs: 7 + 9, wavesBeyondLMs: 1 + 3 + 2, afterLastReplyMs: 6 });
    expect(b.startupMs + b.betweenLinksMs + b.wavesBeyondLMs + b.afterLastReplyMs).toBe(t1 - t0 - 3 * L);
  });

  it("leaves out calls of other cases, and gives no breakdown when the calls do not fall into one wave per link", () => {
    const earlier = { start: t0 - 500, end: t0 - 300 };
    expect(excessBreakdown([earlier, ...calls], t0, t0 + 640, L, 3)?.waves).toBe(3);
    expect(excessBreakdown(calls, t0, t0 + 640, L, 4)).toBeNull();
    expect(excessBreakdown([...calls, { start: t0 + 500, end: null }], t0, t0 + 640, L, 3)).toBeNull();
    expect(excessBreakdown([], t0, t0 + 640, L, 0)).toBeNull();
  });
});
