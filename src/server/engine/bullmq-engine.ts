import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { Queue, WaitingError, Worker, type Job } from "bullmq";
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import { describeError } from "../../core/contracts/errors.js";
import type { CaseEvent, CaseRecords, RunOwnership } from "../store/case-store.js";
import { BusListeners, type CaseEngine, type CaseRunner } from "./case-engine.js";
import { openRedis } from "./redis-connection.js";

export interface BullmqEngineOptions {
  redisUrl: string;
  /** Cases this replica runs at once. */
  concurrency: number;
  /** One rule with the crash quarantine: a case's run starts at most this often. */
  maxRunStarts: number;
  /** BullMQ's job lock; stalled jobs are looked for at the same interval. */
  lockMs: number;
  reconcileMs: number;
  /** Key prefix (tests give each run its own). */
  prefix?: string;
  /** Which store this deployment writes to (src/core/deployment-identity.ts): the tag of the jobs it queues. */
  deployment?: string;
}

/** What a case's job carries: its case id, and the deployment that queued it (absent on jobs queued before the tag existed). */
interface CaseJobData {
  caseId: string;
  deployment?: string;
}

/** How long a worker that handed back another deployment's job waits before taking the next, so a shared queue is not spun through. */
const FOREIGN_JOB_PAUSE_MS = 1_000;

export const CASE_QUEUE = "medmmv-cases";

/** What a replica says to the others on the bus channel. */
type BusMessage = { kind: "event"; from: string; event: CaseEvent } | { kind: "deleted"; from: string; caseId: string };

/**
 * The case engine on Redis: one BullMQ queue of cases, the job id being the case id (adding
 * a case twice is a no-op), a worker per replica. BullMQ's lock renewal and stalled-job check
 * take the place of our old leases: a replica that dies stops renewing, and its cases go
 * back to the queue for another replica, which resumes each from its LangGraph checkpoint in
 * Postgres. Postgres stays the system of record: a reconciler (at start and every
 * `reconcileMs`) queues again the unfinished cases the queue does not know (a Redis that lost
 * its data), and fails with RUN_CRASHED those the queue gave up on.
 *
 * Attempts and the crash quarantine are one rule: BullMQ may start a case `maxRunStarts`
 * times (stalls included), the store counts the same starts (the case service refuses the
 * one past the limit), and whichever sees the limit first fails the case with RUN_CRASHED.
 *
 * Events and deletions cross replicas on one pub/sub channel, so an SSE client on any
 * replica follows a case another one runs, and DELETE reaches the replica running it.
 *
 * One queue per deployment: the default prefix is derived from the store, and each job names
 * the deployment that queued it, so a job of another deployment met on a shared prefix goes
 * back to the queue untouched rather than being completed here as an unknown case.
 */
export class BullmqEngine extends BusListeners implements CaseEngine {
  readonly kind = "bullmq" as const;
  readonly #opts: BullmqEngineOptions;
  readonly #store: Pick<RunOwnership, "listUnfinishedIds"> & Pick<CaseRecords, "getCase">;
  readonly #log: Logger;
  readonly #onGiveUp: (caseId: string, reason: string) => Promise<void>;
  readonly #id = randomUUID();
  readonly #channel: string;
  readonly #queueConn: Redis;
  readonly #pub: Redis;
  readonly #sub: Redis;
  readonly #workerConn: Redis;
  readonly #queue: Queue;
  #worker: Worker | null = null;
  #timer: NodeJS.Timeout | null = null;
  #reconciling: Promise<void> | null = null;
  /** Cases unknown to the queue at the previous pass: queued again only when still unknown now. */
  #unknownBefore = new Set<string>();
  /** The signal of each case this replica runs, so a lost lock can stop it. */
  readonly #running = new Map<string, AbortController>();
  #closing = false;
  /** Stalled jobs this replica's worker found (since it started). */
  #stalled = 0;

  /** Jobs of other deployments this replica handed back, named once each in the log. */
  readonly #foreignSeen = new Set<string>();

  constructor(opts: BullmqEngineOptions, deps: { store: Pick<RunOwnership, "listUnfinishedIds"> & Pick<CaseRecords, "getCase">; logger: Logger; onGiveUp: (caseId: string, reason: string) => Promise<void> }) {
    super();
    this.#opts = opts;
    this.#store = deps.store;
    this.#log = deps.logger;
    this.#onGiveUp = deps.onGiveUp;
    const prefix = opts.prefix ?? "medmmv";
    this.#channel = `${prefix}:bus`;
    this.#queueConn = openRedis(opts.redisUrl, "medmmv-queue");
    this.#pub = openRedis(opts.redisUrl, "medmmv-pub");
    this.#sub = openRedis(opts.redisUrl, null); // no CLIENT SETNAME: a reconnect must send subscriber commands only
    this.#workerConn = openRedis(opts.redisUrl, "medmmv-worker");
    for (const c of [this.#queueConn, this.#pub, this.#sub, this.#workerConn]) c.on("error", (err: Error) => this.#log.warn({ code: (err as NodeJS.ErrnoException).code ?? "REDIS", reason: err.message }, "redis connection error (reconnecting)"));
    this.#queue = new Queue(CASE_QUEUE, {
      connection: this.#queueConn,
      prefix,
      defaultJobOptions: {
        attempts: opts.maxRunStarts,
        backoff: { type: "exponential", delay: 1_000 },
        removeOnComplete: true,
        removeOnFail: { age: 24 * 3600 },
      },
    });
    this.#queue.on("error", (err) => this.#log.warn({ code: describeError(err).code }, "case queue error"));
    this.#sub.on("message", (channel: string, text: string) => {
      if (channel === this.#channel) this.#receive(text);
    });
  }

  async start(runner: CaseRunner): Promise<void> {
    if (this.#worker || this.#closing) return;
    // Subscribing before the connection is ready races ioredis's ready check (an INFO on a
    // connection already in subscriber mode fails, and the subscription with it).
    if (this.#sub.status !== "ready") await once(this.#sub, "ready");
    await this.#sub.subscribe(this.#channel);
    const worker = new Worker(CASE_QUEUE, (job, token) => this.#process(runner, job, token), {
      connection: this.#workerConn,
      prefix: this.#opts.prefix ?? "medmmv",
      concurrency: this.#opts.concurrency,
      lockDuration: this.#opts.lockMs,
      stalledInterval: this.#opts.lockMs,
      // A stall is a run start that never finished: with the first start, maxRunStarts in all.
      maxStalledCount: this.#opts.maxRunStarts - 1,
    });
    worker.on("stalled", (jobId: string) => {
      this.#stalled++;
      this.#log.warn({ caseId: jobId }, "a case's job stalled (its replica stopped renewing the lock): it goes back to the queue");
    });
    worker.on("error", (err) => this.#log.warn({ code: describeError(err).code, reason: err.message }, "case worker error"));
    worker.on("lockRenewalFailed", (ids: string[]) => {
      for (const id of ids) {
        const c = this.#running.get(id);
        if (!c) continue;
        this.#log.warn({ caseId: id }, "lost the case's job lock (Redis restarted, or this replica stalled): stopping here, it runs again from its checkpoint");
        c.abort(new Error("job lock lost"));
      }
    });
    worker.on("failed", (job, err) => {
      if (!job) return;
      const final = /stalled more than allowable limit/.test(err.message) || job.attemptsMade >= (job.opts.attempts ?? 1);
      if (final) void this.#giveUp(job.id ?? job.name, err.message);
    });
    this.#worker = worker;
    await this.#reconcile();
    this.#timer = setInterval(() => void this.#reconcile(), Math.max(this.#opts.reconcileMs, this.#opts.lockMs));
    this.#timer.unref();
  }

  async #process(runner: CaseRunner, job: Job<CaseJobData>, token: string | undefined): Promise<void> {
    const caseId = job.id!;
    if (await this.#isForeign(job)) {
      // Another deployment's case (two deployments sharing one Redis under one prefix): back to
      // the queue untouched for a worker of its own deployment, never run or completed here.
      await job.moveToWait(token);
      if (this.#foreignSeen.size < 1_000 && !this.#foreignSeen.has(caseId)) {
        this.#foreignSeen.add(caseId);
        this.#log.warn(
          { caseId, prefix: this.#opts.prefix ?? "medmmv" },
          "the case queue holds a job of another deployment (its case is not in this store): handed back untouched; give each deployment its own MEDMMV_REDIS_PREFIX (or leave it unset: the default is derived from the store)",
        );
      }
      await new Promise((r) => setTimeout(r, FOREIGN_JOB_PAUSE_MS));
      throw new WaitingError();
    }
    const controller = new AbortController();
    this.#running.set(caseId, controller);
    let outcome;
    try {
      outcome = await runner(caseId, controller.signal);
    } finally {
      this.#running.delete(caseId);
    }
    if (controller.signal.aborted && !this.#closing) {
      // Our lock is gone: whoever holds the job now (or the reconciler) runs it. Queue it
      // again in case nobody does (a Redis that lost it); the id makes that a no-op otherwise.
      void this.enqueue(caseId);
      throw new WaitingError();
    }
    if (outcome === "handed-back") {
      // A graceful stop: back to the queue at once (not a failed attempt) for the next free worker.
      await job.moveToWait(token);
      throw new WaitingError();
    }
  }

  /**
   * A job is another deployment's when its case is not in this store and another deployment
   * tagged it. A job of ours whose case is gone (deleted meanwhile) is not foreign: the runner
   * finds nothing to do and the job completes.
   */
  async #isForeign(job: Job<CaseJobData>): Promise<boolean> {
    const tag = job.data?.deployment;
    if (tag === undefined || tag === this.#opts.deployment) return false;
    return (await this.#store.getCase(job.id!)) === null;
  }

  async #giveUp(caseId: string, reason: string): Promise<void> {
    try {
      await this.#onGiveUp(caseId, reason);
    } catch (err) {
      this.#log.error({ caseId, code: describeError(err).code }, "could not fail a case the queue gave up on (the reconciler tries again)");
    }
  }

  async enqueue(caseId: string): Promise<void> {
    const data: CaseJobData = { caseId, ...(this.#opts.deployment ? { deployment: this.#opts.deployment } : {}) };
    await this.#queue.add("case", data, { jobId: caseId });
  }

  /** One pass; concurrent calls share it. */
  #reconcile(): Promise<void> {
    this.#reconciling ??= this.#reconcilePass().finally(() => {
      this.#reconciling = null;
    });
    return this.#reconciling;
  }

  async #reconcilePass(): Promise<void> {
    if (this.#closing) return;
    try {
      const unknown = new Set<string>();
      let requeued = 0;
      for (const id of await this.#store.listUnfinishedIds()) {
        if (this.#closing) return;
        if (this.#running.has(id)) continue;
        const state = await this.#queue.getJobState(id);
        if (state === "failed") {
          await this.#giveUp(id, "the queue gave up on the case after its attempts");
        } else if (state === "completed") {
          // The job ended but the case did not (its last write was lost): run it again.
          await this.#queue.remove(id).catch(() => undefined);
          await this.enqueue(id);
          requeued++;
        } else if (state === "unknown") {
          // Queued again only when still unknown a lock length later: a replica that was running
          // it (its lock lost with Redis's data) has noticed by then and queued it itself.
          if (this.#unknownBefore.has(id)) {
            await this.enqueue(id);
            requeued++;
          } else unknown.add(id);
        }
      }
      this.#unknownBefore = unknown;
      if (unknown.size > 0 && !this.#closing) setTimeout(() => void this.#reconcile(), this.#opts.lockMs + 250).unref();
      if (requeued) this.#log.warn({ requeued }, "queued again unfinished cases the queue did not know");
    } catch (err) {
      this.#log.warn({ code: describeError(err).code }, "reconciling the store with the case queue failed (next pass retries)");
    }
  }

  publishEvent(event: CaseEvent): void {
    this.deliverEvent(event);
    this.#send({ kind: "event", from: this.#id, event });
  }

  async publishDeleted(caseId: string): Promise<void> {
    this.deliverDeleted(caseId);
    this.#running.get(caseId)?.abort(new Error("case deleted"));
    await this.#queue.remove(caseId).catch(() => undefined); // a running job is locked: its replica stops it
    this.#send({ kind: "deleted", from: this.#id, caseId });
  }

  #send(msg: BusMessage): void {
    this.#pub.publish(this.#channel, JSON.stringify(msg)).catch((err: unknown) => this.#log.warn({ code: describeError(err).code }, "could not publish to the other replicas"));
  }

  #receive(text: string): void {
    let msg: BusMessage;
    try {
      msg = JSON.parse(text) as BusMessage;
    } catch {
      return;
    }
    if (msg.from === this.#id) return;
    if (msg.kind === "event") this.deliverEvent(msg.event);
    else if (msg.kind === "deleted") this.deliverDeleted(msg.caseId);
  }

  async counts(): Promise<{ waiting: number; active: number; delayed: number; failed: number; stalled: number }> {
    const c = await this.#queue.getJobCounts("waiting", "active", "delayed", "failed");
    return { waiting: c.waiting ?? 0, active: c.active ?? 0, delayed: c.delayed ?? 0, failed: c.failed ?? 0, stalled: this.#stalled };
  }

  async close(): Promise<void> {
    this.#closing = true;
    if (this.#timer) clearInterval(this.#timer);
    await this.#reconciling?.catch(() => undefined);
    // Running cases were asked to stop by the case service; close() waits for them to hand back.
    await this.#worker?.close().catch((err: unknown) => this.#log.warn({ code: describeError(err).code }, "closing the case worker failed"));
    await this.#queue.close().catch(() => undefined);
    for (const c of [this.#pub, this.#sub, this.#queueConn, this.#workerConn]) c.disconnect();
  }
}
