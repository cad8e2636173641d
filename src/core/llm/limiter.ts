import { setMaxListeners } from "node:events";

/**
 * A budget of model calls that other processes share too (replicas on one provider): the
 * calls in flight and the requests per minute across all of them, and a pause every one of
 * them honours after the provider answered 429 with Retry-After. The server implements it on
 * Redis; core only asks for a slot and reports push-back.
 */
export interface SharedBudget {
  /** Wait for a slot (in flight and per minute); resolves to its release. Rejects when `signal` aborts. */
  acquire(signal?: AbortSignal): Promise<() => void>;
  /** The provider asked to wait `ms`: no process sharing the budget starts a call before then. */
  pause(ms: number): void;
}

/**
 * Process-wide limit on model calls in flight, shared fairly between cases: waiting calls
 * are queued per case and served round-robin, so one case with many parallel branches
 * cannot starve the others (a plain FIFO semaphore would serve it first-come). With a
 * shared budget, a call that got its turn here also waits for a slot of that budget, so the
 * fair order inside this process holds within the budget of all of them.
 */
export class FairLimiter {
  private inFlight = 0;
  private readonly queues = new Map<string, Array<() => void>>();
  private order: string[] = []; // round-robin ring of case keys with waiters
  private cursor = 0;
  private peak = 0;
  private readonly rateLimitListeners = new Set<() => void>();

  constructor(
    private readonly limit: number,
    private readonly shared: SharedBudget | null = null,
  ) {}

  /**
   * Provider push-back (429) seen by any client sharing this limiter. Callers that start
   * work (the eval runner) listen to slow down; returns the unsubscribe function.
   */
  onRateLimited(listener: () => void): () => void {
    this.rateLimitListeners.add(listener);
    return () => this.rateLimitListeners.delete(listener);
  }

  /** A 429 seen; with the provider's Retry-After, every process sharing the budget waits it out. */
  noteRateLimited(retryAfterMs?: number | null): void {
    if (this.shared && retryAfterMs !== undefined && retryAfterMs !== null && retryAfterMs > 0) this.shared.pause(retryAfterMs);
    for (const l of this.rateLimitListeners) l();
  }

  get active(): number {
    return this.inFlight;
  }
  get peakActive(): number {
    return this.peak;
  }
  get waiting(): number {
    let n = 0;
    for (const q of this.queues.values()) n += q.length;
    return n;
  }

  async run<T>(key: string, signal: AbortSignal | undefined, fn: () => Promise<T>): Promise<T> {
    await this.acquire(key, signal);
    try {
      const releaseShared = this.shared ? await this.shared.acquire(signal) : null;
      try {
        return await fn();
      } finally {
        releaseShared?.();
      }
    } finally {
      this.release();
    }
  }

  private acquire(key: string, signal?: AbortSignal): Promise<void> {
    if (this.inFlight < this.limit && this.waiting === 0) {
      this.take();
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      let q = this.queues.get(key);
      if (!q) {
        q = [];
        this.queues.set(key, q);
        this.order.push(key);
      }
      const grant = () => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      };
      const onAbort = () => {
        const list = this.queues.get(key);
        const i = list ? list.indexOf(grant) : -1;
        if (list && i >= 0) list.splice(i, 1);
        this.dropEmpty(key);
        reject(signal?.reason ?? new Error("aborted"));
      };
      if (signal?.aborted) return onAbort();
      // Many calls of one case may wait on its signal at once; that is by design.
      if (signal) setMaxListeners(0, signal);
      signal?.addEventListener("abort", onAbort, { once: true });
      q.push(grant);
    });
  }

  private take(): void {
    this.inFlight++;
    if (this.inFlight > this.peak) this.peak = this.inFlight;
  }

  private release(): void {
    this.inFlight--;
    while (this.inFlight < this.limit && this.order.length > 0) {
      if (this.cursor >= this.order.length) this.cursor = 0;
      const key = this.order[this.cursor]!;
      const q = this.queues.get(key)!;
      const next = q.shift()!;
      this.dropEmpty(key);
      // Advance only if the key is still in the ring (dropEmpty removed it otherwise).
      if (this.order[this.cursor] === key) this.cursor++;
      this.take();
      next();
    }
  }

  private dropEmpty(key: string): void {
    const q = this.queues.get(key);
    if (q && q.length === 0) {
      this.queues.delete(key);
      const i = this.order.indexOf(key);
      if (i >= 0) {
        this.order.splice(i, 1);
        if (i < this.cursor) this.cursor--;
      }
    }
  }
}
