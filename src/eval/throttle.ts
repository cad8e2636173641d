import { MedmmvError } from "../core/contracts/errors.js";

export interface ThrottleStats {
  /** The --concurrency ceiling. */
  maxConcurrency: number;
  /** Effective item concurrency now, and the lowest it went. */
  concurrency: number;
  minConcurrency: number;
  /** Rate-limit signals seen (provider 429s, items that ran out of retries). */
  rateLimited: number;
  /** Times the limit was cut. */
  decreases: number;
}

/**
 * Additive-increase / multiplicative-decrease limit on items in flight. The LLM retry
 * layer already waits out each 429 (Retry-After); when they keep coming, starting fewer
 * items is what actually lowers the request rate. A rate-limit signal halves the limit
 * (at most once per cooldown, since one burst produces many 429s at once); each item
 * that finishes raises it by 1/limit, so it climbs back by about one per "round".
 */
export class AimdGate {
  private limit: number;
  private inFlight = 0;
  private readonly waiters: Array<() => void> = [];
  private lastDecrease = -Infinity;
  private stats_: ThrottleStats;

  constructor(
    private readonly max: number,
    private readonly opts: { min?: number; cooldownMs?: number; now?: () => number } = {},
  ) {
    if (!Number.isInteger(max) || max < 1) throw new MedmmvError("INVALID_INPUT", "concurrency must be an integer ≥ 1");
    this.limit = max;
    this.stats_ = { maxConcurrency: max, concurrency: max, minConcurrency: max, rateLimited: 0, decreases: 0 };
  }

  /** Items allowed in flight now. */
  get current(): number {
    return Math.max(this.opts.min ?? 1, Math.floor(this.limit));
  }

  get active(): number {
    return this.inFlight;
  }

  stats(): ThrottleStats {
    return { ...this.stats_, concurrency: this.current };
  }

  /** Wait for a slot; rejects with ABORTED when the signal fires first. */
  acquire(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(new MedmmvError("ABORTED", "eval cancelled"));
    if (this.inFlight < this.current && this.waiters.length === 0) {
      this.inFlight++;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const grant = () => {
        signal?.removeEventListener("abort", onAbort);
        this.inFlight++;
        resolve();
      };
      const onAbort = () => {
        const i = this.waiters.indexOf(grant);
        if (i >= 0) this.waiters.splice(i, 1);
        reject(new MedmmvError("ABORTED", "eval cancelled"));
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.waiters.push(grant);
    });
  }

  release(): void {
    this.inFlight--;
    this.pump();
  }

  /** An item finished without running out of retries: creep back up. */
  onSuccess(): void {
    this.limit = Math.min(this.max, this.limit + 1 / this.limit);
    this.pump();
  }

  /** The provider is rate limiting us. */
  onRateLimited(): void {
    this.stats_.rateLimited++;
    const now = (this.opts.now ?? Date.now)();
    if (now - this.lastDecrease < (this.opts.cooldownMs ?? 2000)) return;
    const before = this.current;
    this.limit = Math.max(this.opts.min ?? 1, this.limit / 2);
    this.lastDecrease = now;
    if (this.current < before) this.stats_.decreases++;
    this.stats_.minConcurrency = Math.min(this.stats_.minConcurrency, this.current);
  }

  private pump(): void {
    while (this.waiters.length > 0 && this.inFlight < this.current) this.waiters.shift()!();
  }
}
