import type { Logger } from "pino";
import { describeError } from "../../core/contracts/errors.js";
import type { CaseEvent, RunOwnership } from "../store/case-store.js";
import { BusListeners, type CaseEngine, type CaseRunner } from "./case-engine.js";

/**
 * The engine of one process on its own store (no REDIS_URL): a case runs in this process as
 * soon as it is enqueued, and the cases left unfinished by the previous run of this process
 * (killed, or stopped mid-case) are resumed when it starts. Nobody else runs cases on this
 * store, so there is nothing to claim or renew; the crash quarantine (the store's count of
 * run starts, read by the case service) stops a case that kills the process every time.
 */
export class LocalEngine extends BusListeners implements CaseEngine {
  readonly kind = "local" as const;
  readonly #store: Pick<RunOwnership, "listUnfinishedIds">;
  readonly #log: Logger;
  #runner: CaseRunner | null = null;
  readonly #running = new Map<string, { controller: AbortController; done: Promise<void> }>();
  #closing = false;

  constructor(deps: { store: Pick<RunOwnership, "listUnfinishedIds">; logger: Logger }) {
    super();
    this.#store = deps.store;
    this.#log = deps.logger;
  }

  async start(runner: CaseRunner): Promise<void> {
    if (this.#runner || this.#closing) return;
    this.#runner = runner;
    let ids: string[];
    try {
      ids = await this.#store.listUnfinishedIds();
    } catch (err) {
      this.#log.error({ code: describeError(err).code }, "looking for unfinished cases failed");
      return;
    }
    for (const id of ids) this.#run(id);
    if (ids.length) this.#log.info({ resumed: ids.length }, "resumed unfinished cases");
  }

  async enqueue(caseId: string): Promise<void> {
    this.#run(caseId);
  }

  #run(caseId: string, attempt = 1): void {
    const runner = this.#runner;
    if (!runner || this.#closing || this.#running.has(caseId)) return;
    const controller = new AbortController();
    const done = runner(caseId, controller.signal)
      .then(() => undefined)
      .catch((err: unknown) => {
        // The store was unreachable (the runner counts the start first, so the quarantine bounds this).
        const delayMs = Math.min(30_000, 1_000 * 2 ** (attempt - 1));
        this.#log.warn({ caseId, code: describeError(err).code, retryInMs: delayMs }, "case run failed outside the pipeline; trying again");
        setTimeout(() => this.#run(caseId, attempt + 1), delayMs).unref();
      })
      .finally(() => this.#running.delete(caseId));
    this.#running.set(caseId, { controller, done });
  }

  publishEvent(event: CaseEvent): void {
    this.deliverEvent(event);
  }

  async publishDeleted(caseId: string): Promise<void> {
    this.deliverDeleted(caseId);
  }

  async counts(): Promise<{ waiting: number; active: number; delayed: number; failed: number; stalled: number }> {
    return { waiting: 0, active: this.#running.size, delayed: 0, failed: 0, stalled: 0 };
  }

  async close(): Promise<void> {
    this.#closing = true;
    await Promise.allSettled([...this.#running.values()].map((r) => r.done));
  }
}
