import { describe, expect, it } from "vitest";
import { progressBar, progressText, ProgressReporter, type ProgressState } from "../../src/eval/progress.js";

const state = (over: Partial<ProgressState> = {}): ProgressState => ({ total: 100, resumed: 10, done: 30, correct: 28, failed: 2, tokens: 123_456, costUsd: 0.4321, elapsedMs: 60_000, ...over });

describe("progress line", () => {
  it("done/total, accuracy so far, rate, ETA, tokens, cost", () => {
    // 40 finished (10 resumed + 30 now) of 100; 28/40 right = 70%; 30 items in 60 s = 0.5/s; 60 left → 120 s.
    expect(progressText(state())).toBe("40/100 · acc 70.0% · failed 2 · 0.50 items/s · ETA 2m00s · 123.5k tok · $0.4321");
    expect(progressText(state({ done: 0, resumed: 0, correct: 0, elapsedMs: 0 }))).toMatch(/^0\/100 · acc — · .* ETA \? /);
    expect(progressText(state({ done: 90, concurrency: 2 }))).toMatch(/ETA 0s .* conc 2$/);
  });

  it("bar", () => {
    expect(progressBar(5, 10, 10)).toBe("[█████░░░░░]");
    expect(progressBar(0, 0, 4)).toBe("[████]");
  });
});

describe("ProgressReporter", () => {
  it("on a terminal redraws one line in place, at most ten times a second", () => {
    const out: string[] = [];
    let now = 0;
    const r = new ProgressReporter({ isTTY: true, columns: 200, write: (c: string) => out.push(c) }, () => state(), { now: () => now });
    r.start();
    now = 50;
    r.update(); // 50 ms after the last draw: skipped
    expect(out).toHaveLength(1);
    now = 150;
    r.update();
    r.stop();
    expect(out).toHaveLength(3);
    for (const chunk of out) expect(chunk.startsWith("\r\x1b[2K[")).toBe(true);
    expect(out.slice(0, -1).every((c) => !c.includes("\n"))).toBe(true);
    expect(out.at(-1)!.endsWith("\n")).toBe(true);
  });

  it("elsewhere writes a log line at most every interval, and a final line", () => {
    const out: string[] = [];
    let now = 0;
    const r = new ProgressReporter({ write: (c: string) => out.push(c) }, () => state(), { intervalMs: 5000, now: () => now });
    r.start(); // first line at once
    r.update(); // item finished: no extra line in a log
    now = 1000;
    (r as unknown as { tick(): void }).tick();
    now = 5100;
    (r as unknown as { tick(): void }).tick();
    r.stop();
    expect(out).toEqual([`[eval] ${progressText(state())}\n`, `[eval] ${progressText(state())}\n`, `[eval] finished ${progressText(state())}\n`]);
    // Counts only: nothing but digits, units and fixed words.
    for (const line of out) expect(line.replace(/[\d.,:$%/·?—-]|items|acc|failed|ETA|tok|eval|finished|[kMsmh]|\s|\[|\]/g, "")).toBe("");
  });
});
