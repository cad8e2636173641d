import { RateLimiterRes, type RateLimiterAbstract } from "rate-limiter-flexible";
import { MedmmvError } from "../../core/contracts/errors.js";

/** Waits until `limiter` grants one call under `key` (or the signal aborts). */
export async function consumeOrWait(limiter: RateLimiterAbstract, key: string, signal?: AbortSignal): Promise<void> {
  for (;;) {
    try {
      await limiter.consume(key);
      return;
    } catch (res) {
      if (!(res instanceof RateLimiterRes)) throw res;
      await abortableSleep(Math.max(10, res.msBeforeNext), signal);
    }
  }
}

/** Sleeps `ms`, or rejects with the signal's reason when it aborts first. */
export function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason ?? new MedmmvError("ABORTED", "aborted"));
    const onAbort = (): void => {
      clearTimeout(t);
      reject(signal!.reason ?? new MedmmvError("ABORTED", "aborted"));
    };
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
