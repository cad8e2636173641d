import { describe, expect, it } from "vitest";
import { UsageMeter } from "../../../src/core/llm/usage.js";

const PRICES = { "m-cached": { input: 2, cachedInput: 1, output: 10 } };

/** Process warnings with our code, collected while `fn` runs (emitWarning is asynchronous). */
async function warningsDuring(fn: () => void): Promise<string[]> {
  const seen: string[] = [];
  const on = (w: Error & { code?: string }) => {
    if (w.code === "MEDMMV_USAGE_REFUSED") seen.push(w.message);
  };
  process.on("warning", on);
  try {
    fn();
    await new Promise((r) => setImmediate(r));
    return seen;
  } finally {
    process.off("warning", on);
  }
}

describe("UsageMeter: the provider's cached-token figure", () => {
  it("counts a figure in [0, prompt tokens] at the cached rate", () => {
    const m = new UsageMeter(PRICES);
    m.record({ kind: "llm", agent: "rollout", model: "m-cached", latencyMs: 1, promptTokens: 1000, cachedPromptTokens: 400, completionTokens: 100 });
    const u = m.snapshot(0);
    expect(u.cachedPromptTokens).toBe(400);
    // 600 × $2 + 400 × $1 + 100 × $10, per million.
    expect(u.costUsd).toBeCloseTo((600 * 2 + 400 * 1 + 100 * 10) / 1e6, 12);
  });

  it("refuses one outside [0, prompt tokens] (or not a whole number): 0 cached, full input price, reported once per model", async () => {
    const m = new UsageMeter(PRICES);
    const warnings = await warningsDuring(() => {
      m.record({ kind: "llm", agent: "rollout", model: "m-cached", latencyMs: 1, promptTokens: 1000, cachedPromptTokens: 5000, completionTokens: 0 });
      m.record({ kind: "llm", agent: "rollout", model: "m-cached", latencyMs: 1, promptTokens: 1000, cachedPromptTokens: -3, completionTokens: 0 });
      m.record({ kind: "llm", agent: "judge", model: "m-odd", latencyMs: 1, promptTokens: 10, cachedPromptTokens: 2.5, completionTokens: 0 });
    });
    const u = m.snapshot(0);
    expect(u.cachedPromptTokens).toBe(0);
    expect(u.byAgent["rollout"]?.cachedPromptTokens).toBe(0);
    expect(u.costUsd).toBeCloseTo((2000 * 2) / 1e6, 12);
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toMatch(/m-cached reported 5000 cached prompt tokens for a call of 1000 prompt tokens .*outside \[0, 1000\], counted as 0/);
    expect(warnings[1]).toMatch(/m-odd reported 2\.5 cached/);
  });
});
