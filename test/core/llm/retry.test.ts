import { describe, expect, it } from "vitest";
import { MedmmvError } from "../../../src/core/contracts/errors.js";
import { classifyError, parseRetryAfter, withRetry, type RetryPolicy } from "../../../src/core/llm/retry.js";

/** An error shaped like the OpenAI SDK's APIError: status and headers on the error. */
function httpError(status: number, headers: Record<string, string> | Headers = {}): Error & { status: number; headers: unknown } {
  return Object.assign(new Error(`HTTP ${status}`), { status, headers });
}

const policy = (p: Partial<RetryPolicy> = {}): RetryPolicy => ({ maxAttempts: 4, baseDelayMs: 10, maxRetryAfterMs: 5_000, timeoutMs: 2_000, random: () => 0.5, ...p });

describe("parseRetryAfter", () => {
  it("reads delta-seconds and retry-after-ms", () => {
    expect(parseRetryAfter("2", false)).toBe(2000);
    expect(parseRetryAfter("0", false)).toBe(0);
    expect(parseRetryAfter("1.5", false)).toBe(1500);
    expect(parseRetryAfter("250", true)).toBe(250);
  });

  it("reads an HTTP-date relative to now, and a past date as no wait", () => {
    const now = Date.parse("2025-03-01T12:00:00.000Z");
    expect(parseRetryAfter("Sat, 01 Mar 2025 12:00:07 GMT", false, now)).toBe(7000);
    expect(parseRetryAfter("Sat, 01 Mar 2025 11:59:00 GMT", false, now)).toBe(0);
  });

  it("ignores empty or unreadable values", () => {
    expect(parseRetryAfter(null, false)).toBeNull();
    expect(parseRetryAfter("  ", false)).toBeNull();
    expect(parseRetryAfter("soon", false)).toBeNull();
    expect(parseRetryAfter("-3", false)).toBeNull();
    // retry-after-ms is a number of milliseconds, never a date.
    expect(parseRetryAfter("Sat, 01 Mar 2025 12:00:07 GMT", true)).toBeNull();
  });
});

describe("classifyError", () => {
  it("takes status and Retry-After from a plain header record or a Headers object", () => {
    expect(classifyError(httpError(429, { "retry-after": "3" }), false)).toMatchObject({ retryable: true, retryAfterMs: 3000, status: 429 });
    expect(classifyError(httpError(503, new Headers({ "Retry-After": "4" })), false)).toMatchObject({ retryable: true, retryAfterMs: 4000, status: 503 });
    // OpenAI's millisecond header wins over the seconds one.
    expect(classifyError(httpError(429, { "retry-after": "3", "retry-after-ms": "120" }), false).retryAfterMs).toBe(120);
    // The status may also sit on a response object (fetch-style errors).
    expect(classifyError(Object.assign(new Error("x"), { response: { status: 502, headers: {} } }), false)).toMatchObject({ retryable: true, status: 502 });
  });

  it("retries 408/409/429/5xx and connection errors, not other 4xx", () => {
    for (const s of [408, 409, 429, 500, 503]) expect(classifyError(httpError(s), false).retryable).toBe(true);
    for (const s of [400, 401, 403, 404, 422]) expect(classifyError(httpError(s), false).retryable).toBe(false);
    expect(classifyError(new Error("ECONNRESET"), false)).toMatchObject({ retryable: true, status: null });
  });

  it("reports the parent's abort as aborted, whatever the error", () => {
    expect(classifyError(httpError(500), true)).toMatchObject({ aborted: true, retryable: false });
  });

  it("keeps a MedmmvError's own retryability", () => {
    expect(classifyError(new MedmmvError("LLM_TIMEOUT", "t"), false)).toMatchObject({ retryable: true, timeout: true });
    expect(classifyError(new MedmmvError("LLM_BAD_OUTPUT", "b", { retryable: false }), false)).toMatchObject({ retryable: false });
  });
});

describe("withRetry", () => {
  it("counts attempts and gives up after maxAttempts with a retryable error", async () => {
    let calls = 0;
    const err = await withRetry("x", policy({ maxAttempts: 3 }), undefined, async () => {
      calls++;
      throw httpError(500);
    }).catch((e: unknown) => e);
    expect(calls).toBe(3);
    expect(err).toBeInstanceOf(MedmmvError);
    expect((err as MedmmvError).code).toBe("LLM_RETRYABLE");
    expect((err as MedmmvError).retryable).toBe(true);
    expect((err as MedmmvError).details).toMatchObject({ attempts: 3, status: 500 });
  });

  it("returns the first success and reports the attempt number to fn", async () => {
    const seen: number[] = [];
    const out = await withRetry("x", policy(), undefined, async ({ attempt }) => {
      seen.push(attempt);
      if (attempt < 3) throw httpError(503);
      return "ok";
    });
    expect(out).toBe("ok");
    expect(seen).toEqual([1, 2, 3]);
  });

  it("does not retry a non-retryable status", async () => {
    let calls = 0;
    const err = await withRetry("x", policy(), undefined, async () => {
      calls++;
      throw httpError(400);
    }).catch((e: unknown) => e);
    expect(calls).toBe(1);
    expect((err as MedmmvError).code).toBe("LLM_FATAL");
  });

  it("draws full jitter from the injected random within [0, base·2^(n−1)]", async () => {
    for (const [r, expected] of [
      [0, [0, 0, 0]],
      [0.5, [5, 10, 20]],
      [0.999, [10, 20, 40]],
    ] as const) {
      const delays: number[] = [];
      await withRetry(
        "x",
        policy({ maxAttempts: 4, baseDelayMs: 10, random: () => r }),
        undefined,
        async ({ attempt }) => {
          if (attempt < 4) throw httpError(500);
          return null;
        },
        (info) => delays.push(info.delayMs),
      );
      expect(delays).toEqual(expected);
    }
  });

  it("waits at least Retry-After, even when the jitter is shorter", async () => {
    const delays: number[] = [];
    const started = Date.now();
    let lastStart = 0;
    await withRetry(
      "x",
      policy({ random: () => 0 }),
      undefined,
      async ({ attempt }) => {
        lastStart = Date.now();
        if (attempt === 1) throw httpError(429, { "retry-after-ms": "80" });
        return null;
      },
      (info) => delays.push(info.delayMs),
    );
    expect(delays).toEqual([80]);
    expect(lastStart - started).toBeGreaterThanOrEqual(75);
  });

  it("fails at once, as retryable, when Retry-After is beyond the budget", async () => {
    let calls = 0;
    const started = Date.now();
    const err = await withRetry("x", policy({ maxRetryAfterMs: 1_000 }), undefined, async () => {
      calls++;
      throw httpError(429, { "retry-after": "30" });
    }).catch((e: unknown) => e);
    expect(Date.now() - started).toBeLessThan(500);
    expect(calls).toBe(1);
    expect((err as MedmmvError).code).toBe("LLM_RETRYABLE");
    expect((err as MedmmvError).retryable).toBe(true);
    expect((err as MedmmvError).details).toMatchObject({ retryAfterMs: 30_000 });
  });

  it("stops waiting and fails as aborted when the caller aborts during backoff", async () => {
    const ctrl = new AbortController();
    let calls = 0;
    const started = Date.now();
    setTimeout(() => ctrl.abort(), 30);
    const err = await withRetry("x", policy({ baseDelayMs: 10_000, random: () => 1 }), ctrl.signal, async () => {
      calls++;
      throw httpError(500);
    }).catch((e: unknown) => e);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(calls).toBe(1);
    expect((err as MedmmvError).code).toBe("ABORTED");
  });

  it("passes an abortable child signal to each attempt and times the attempt out", async () => {
    let calls = 0;
    const err = await withRetry("x", policy({ maxAttempts: 2, timeoutMs: 40, random: () => 0 }), undefined, ({ signal }) => {
      calls++;
      return new Promise((_resolve, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true }));
    }).catch((e: unknown) => e);
    expect(calls).toBe(2);
    expect((err as MedmmvError).code).toBe("LLM_TIMEOUT");
  });

  it("does not start when the caller has already aborted", async () => {
    const ctrl = new AbortController();
    ctrl.abort();
    let calls = 0;
    await expect(withRetry("x", policy(), ctrl.signal, async () => void calls++)).rejects.toMatchObject({ code: "ABORTED" });
    expect(calls).toBe(0);
  });

  it("runs each attempt inside the gate (e.g. a limiter slot)", async () => {
    let gated = 0;
    await withRetry(
      "x",
      policy({ random: () => 0 }),
      undefined,
      async ({ attempt }) => {
        if (attempt < 2) throw httpError(500);
        return null;
      },
      undefined,
      async (run) => {
        gated++;
        return run();
      },
    );
    expect(gated).toBe(2);
  });
});
