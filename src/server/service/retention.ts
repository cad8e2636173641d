import type { Logger } from "pino";
import { describeError } from "../../core/contracts/errors.js";
import type { AccessTrail, CaseRecords } from "../store/case-store.js";
import type { CaseService } from "./case-service.js";

const DAY_MS = 24 * 60 * 60 * 1000;
/** Cases purged per store query; a sweep keeps going until none is left past the age. */
const BATCH = 100;

/**
 * MEDMMV_RETENTION_DAYS: a case's content (input, images, result, graphs, events, turns,
 * checkpoints) is purged once it is older than the retention, counted from its creation;
 * its access trail is kept, and each purge is itself an event in it (actor: the service's
 * retention, action `purge`). The event is written first: a purge that cannot be recorded
 * does not happen (the next sweep tries again), and one that then fails is recorded as failed.
 */
export class RetentionSweeper {
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<number> | null = null;

  constructor(
    private readonly deps: { store: CaseRecords & AccessTrail; service: Pick<CaseService, "purge">; days: number; logger: Logger },
  ) {}

  /** Purge every case created more than `days` before `nowMs`; answers how many were purged. */
  async sweep(nowMs = Date.now()): Promise<number> {
    const { store, service, days, logger } = this.deps;
    const before = new Date(nowMs - days * DAY_MS).toISOString();
    let purged = 0;
    for (;;) {
      const batch = await store.listCreatedBefore(before, BATCH);
      let progressed = false;
      for (const c of batch) {
        const event = { tenant: c.tenant, actor: { type: "system" as const, id: "retention" }, action: "purge", caseId: c.id, client: null, requestId: null };
        try {
          await store.appendAccess({ ...event, outcome: "success", detail: { retentionDays: days } });
        } catch (err) {
          logger.error({ caseId: c.id, code: describeError(err).code }, "retention: the purge could not be recorded, so the case was kept; the next sweep tries again");
          continue;
        }
        try {
          await service.purge(c.id);
          purged++;
          progressed = true;
        } catch (err) {
          const code = describeError(err).code;
          logger.error({ caseId: c.id, code }, "retention: purge failed");
          await store.appendAccess({ ...event, outcome: "failed", detail: { retentionDays: days, code } }).catch(() => undefined);
        }
      }
      if (batch.length < BATCH || !progressed) break;
    }
    if (purged) logger.info({ purged, retentionDays: days }, "retention: purged cases past their age");
    return purged;
  }

  /** Sweep now and then once a day, never two sweeps at once; the timer does not keep the process alive. */
  start(): void {
    const run = () => {
      if (this.#running) return;
      this.#running = this.sweep()
        .catch((err: unknown) => {
          this.deps.logger.error({ code: describeError(err).code }, "retention: sweep failed");
          return 0;
        })
        .finally(() => (this.#running = null));
    };
    run();
    this.#timer = setInterval(run, DAY_MS);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    await this.#running;
  }
}
