import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { Logger } from "pino";
import { assertLlmConfigured, type Config } from "../../core/config.js";
import { prepareCase } from "../../core/intake/case-intake.js";
import type { ClinicalCase, PreparedCase } from "../../core/contracts/clinical-case.js";
import type { DiagnosisResult } from "../../core/contracts/diagnosis-result.js";
import { MedmmvError, describeError, isMedmmvError } from "../../core/contracts/errors.js";
import { pipelineOptions, type Pipeline } from "../../core/workflow/pipeline.js";
import { caseBudgetFor } from "../../core/workflow/case-budget.js";
import type { PipelineOptions } from "../../core/workflow/state.js";
import {
  TERMINAL_STATUSES,
  type CaseEvent,
  type CaseLease,
  type CaseRecord,
  type CaseStatus,
  type CaseStore,
  type CaseSummary,
} from "../store/case-store.js";
import { rebuildPreparedCase, requestHash, toStoredInput } from "./stored-case.js";
import { EventHub, type CaseListener } from "./event-hub.js";
import type { AgentDeps } from "../../core/agents/agent-context.js";
import { ProgressTracker } from "./progress.js";

/** Per-request pipeline settings a client may choose (bounded by the route schema). */
export interface CaseOverrides {
  k?: number;
  maxRepairs?: number;
  adaptive?: boolean;
  /** The case's budget; each limit defaults to the server's (MEDMMV_CASE_MAX_*). */
  maxTokens?: number;
  maxCostUsd?: number;
}

export interface SubmitRequest {
  /** sha256 of the caller's API key: the case belongs to it. */
  owner: string;
  input: ClinicalCase;
  overrides?: CaseOverrides;
  idempotencyKey?: string | null;
}

export interface Submission {
  record: CaseRecord;
  /** True when an Idempotency-Key matched a finished case: nothing new was run. */
  replayed: boolean;
}

export interface CaseServiceDeps {
  config: Config;
  store: CaseStore;
  pipeline: Pipeline;
  logger: Logger;
  /** Defaults to makeRunnerId(). */
  runnerId?: string;
}

interface CaseRun {
  controller: AbortController;
  tracker: ProgressTracker;
  done: Promise<void>;
  deleted: boolean;
  /** Another process holds the case now (our lease lapsed, or it was deleted there): stop quietly. */
  lost: boolean;
}

/**
 * This process's runner id. Host and pid let a process restarted on the same host see that
 * the previous holder of a case is dead and adopt it at once; the random part keeps a new
 * process that got an old pid (pid 1 in a restarted container) apart from its predecessor.
 */
export function makeRunnerId(): string {
  return `${hostname()}/${process.pid}/${randomBytes(4).toString("hex")}`;
}

/** The runner ids of the services alive in this process (tests run several in one). */
const liveRunners = new Set<string>();

/** True when `runner` ran on this host in a process that no longer exists. */
export function isDeadOnThisHost(runner: string, self: string): boolean {
  const [host, pidText] = runner.split("/");
  if (runner === self || liveRunners.has(runner) || host !== hostname()) return false;
  const pid = Number(pidText);
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  if (pid === process.pid) return true; // our pid, another runner id: a predecessor of ours
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    // EPERM: it exists (another user's process); only ESRCH says it is gone.
    return (err as NodeJS.ErrnoException).code === "ESRCH";
  }
}

export function isTerminal(status: CaseStatus): boolean {
  return TERMINAL_STATUSES.includes(status);
}

/** How long DELETE waits for an aborted run to unwind before purging anyway. */
const DELETE_UNWIND_MS = 10_000;

/**
 * Accepting, running, resuming and cancelling cases. Every accepted case is in the
 * store before any model call; its events are appended to the store in emission order
 * and then fanned out live; the pipeline checkpoints into the same store, so a case cut
 * off by a crash or a shutdown resumes at the next start. Runs are detached from HTTP
 * requests: a client that hangs up does not cancel its case, only DELETE does.
 */
export class CaseService {
  readonly hub = new EventHub();
  readonly #config: Config;
  readonly #store: CaseStore;
  readonly #pipeline: Pipeline;
  readonly #log: Logger;
  readonly #runs = new Map<string, CaseRun>();
  /** Per-case write queue: events and progress land in the order they were emitted. */
  readonly #tails = new Map<string, Promise<void>>();
  readonly #deleting = new Set<string>();
  #closing = false;
  /** Who this process is to the other processes on the store, and how long its claims last. */
  readonly runnerId: string;
  readonly #leaseMs: number;
  #timers: NodeJS.Timeout[] = [];
  #adopting: Promise<number> | null = null;

  constructor(deps: CaseServiceDeps) {
    this.#config = deps.config;
    this.#store = deps.store;
    this.#pipeline = deps.pipeline;
    this.#log = deps.logger;
    this.runnerId = deps.runnerId ?? deps.config.store.runnerId ?? makeRunnerId();
    this.#leaseMs = deps.config.store.leaseMs;
    liveRunners.add(this.runnerId);
  }

  #lease(now = Date.now()): CaseLease {
    return { runner: this.runnerId, expiresAtMs: now + this.#leaseMs };
  }

  /**
   * Take part in the store's shared work: adopt the unfinished cases nobody runs (a
   * previous process's, or a dead peer's once its leases expire), renew this process's
   * leases every third of their length, and look for orphaned cases once per lease.
   */
  start(): void {
    if (this.#timers.length > 0 || this.#closing) return;
    void this.adoptUnfinished();
    const renew = setInterval(() => void this.#renewLeases(), Math.max(100, Math.floor(this.#leaseMs / 3)));
    const adopt = setInterval(() => void this.adoptUnfinished(), this.#leaseMs);
    for (const t of [renew, adopt]) t.unref();
    this.#timers = [renew, adopt];
  }

  async #renewLeases(): Promise<void> {
    const ids = [...this.#runs.keys()];
    if (ids.length === 0 || this.#closing) return;
    let lost: string[];
    try {
      lost = await this.#store.renewLeases(this.runnerId, ids, Date.now() + this.#leaseMs);
    } catch (err) {
      // The store is unreachable: keep running; if it stays so past the lease, a peer may adopt.
      this.#log.warn({ code: describeError(err).code, cases: ids.length }, "could not renew case leases");
      return;
    }
    for (const id of lost) {
      const run = this.#runs.get(id);
      if (!run || run.deleted) continue;
      run.lost = true;
      run.controller.abort(new MedmmvError("ABORTED", "another process holds this case now"));
      this.#log.warn({ caseId: id }, "case lease lost: another process runs it now (or it was deleted); stopping here");
    }
  }

  /** The model, prompts and search the pipeline uses, for work on finished cases (conversation turns). */
  get agentDeps(): AgentDeps {
    return { llm: this.#pipeline.llm, prompts: this.#pipeline.prompts, search: this.#pipeline.search };
  }

  get closing(): boolean {
    return this.#closing;
  }

  async submit(req: SubmitRequest): Promise<Submission> {
    if (this.#closing) throw new MedmmvError("ABORTED", "the server is shutting down; retry in a moment");
    assertLlmConfigured(this.#config);
    const { id: clientId, ...rest } = req.input;
    // Case ids are chosen here so that one client's ids can never collide with, or
    // reveal, another's; the client's own id is kept in the metadata.
    const withClientId: ClinicalCase = clientId === undefined ? rest : { ...rest, metadata: { ...rest.metadata, clientId } };
    const prepared = await prepareCase(withClientId, {
      maxBytes: this.#config.http.maxImageBytes,
      maxPixels: this.#config.http.maxImagePixels,
      maxDecodedBytes: this.#config.http.maxImageDecodedBytes,
      maxDicomFrames: this.#config.images.dicomMaxFrames,
      dicomweb: this.#config.images.dicomweb,
      allowPath: false,
    });
    const stored = toStoredInput(prepared);
    const overrides = { ...req.overrides };
    const hash = requestHash(stored, overrides as Record<string, unknown>);
    const key = req.idempotencyKey ?? null;
    if (key !== null) {
      const prior = await this.#store.findByIdempotencyKey(req.owner, key);
      if (prior) return this.#replay(prior, hash);
    }
    const { maxTokens, maxCostUsd, ...others } = overrides;
    const options = pipelineOptions(this.#config, { ...others, budget: caseBudgetFor(this.#config, { maxTokens, maxCostUsd }) });
    for (const img of prepared.images) await this.#store.putImage(img);
    let record: CaseRecord;
    try {
      record = await this.#store.createCase({
        id: prepared.id,
        owner: req.owner,
        input: stored,
        options: options as unknown as Record<string, unknown>,
        idempotencyKey: key,
        requestHash: hash,
        lease: this.#lease(),
      });
    } catch (err) {
      // Two requests with one key raced; the loser answers as a retry would.
      if (key !== null && isMedmmvError(err) && err.code === "CONFLICT") {
        const prior = await this.#store.findByIdempotencyKey(req.owner, key);
        if (prior) return this.#replay(prior, hash);
      }
      throw err;
    }
    this.#log.info({ caseId: record.id, imageCount: prepared.images.length, k: options.k }, "case accepted");
    void this.#append(record.id, "status", { status: "queued" });
    this.#start(record, prepared, options, false);
    return { record, replayed: false };
  }

  #replay(prior: CaseRecord, hash: string): Submission {
    if (prior.requestHash !== hash) {
      throw new MedmmvError(
        "UNPROCESSABLE",
        "this Idempotency-Key was already used with a different request body; use a new key for a new case",
        { details: { caseId: prior.id } },
      );
    }
    if (!isTerminal(prior.status)) {
      throw new MedmmvError(
        "CONFLICT",
        `the request with this Idempotency-Key is still being processed (case ${prior.id} is ${prior.status}); retry later or GET /cases/${prior.id}`,
        { details: { caseId: prior.id, status: prior.status } },
      );
    }
    return { record: prior, replayed: true };
  }

  /** Resolves when the case's run ends (finished, failed, or interrupted by shutdown). */
  async wait(id: string): Promise<CaseRecord | null> {
    const run = this.#runs.get(id);
    if (run) await run.done;
    await this.#tails.get(id);
    return this.#store.getCase(id);
  }

  /** The case if it belongs to `owner`; otherwise NOT_FOUND, so ids of others' cases are not confirmed. */
  async get(owner: string, id: string): Promise<CaseRecord> {
    const record = await this.#store.getCase(id);
    if (!record || record.owner !== owner) throw new MedmmvError("NOT_FOUND", `case ${id} not found`);
    return record;
  }

  list(owner: string, q: { limit: number; cursor?: string | null; status?: CaseStatus }): Promise<{ items: CaseSummary[]; nextCursor: string | null }> {
    return this.#store.listCases({ owner, ...q });
  }

  events(id: string, afterSeq = 0): Promise<CaseEvent[]> {
    return this.#store.listEvents(id, afterSeq);
  }

  subscribe(id: string, listener: CaseListener): () => void {
    return this.hub.subscribe(id, listener);
  }

  isRunning(id: string): boolean {
    return this.#runs.has(id);
  }

  /** Purge a case; a running case's model calls are aborted first. */
  async delete(owner: string, id: string): Promise<void> {
    await this.get(owner, id);
    this.#deleting.add(id);
    try {
      const run = this.#runs.get(id);
      if (run) {
        run.deleted = true;
        run.controller.abort(new MedmmvError("ABORTED", "case deleted"));
        await Promise.race([run.done, sleep(DELETE_UNWIND_MS)]);
      }
      await this.#tails.get(id);
      await this.#store.deleteCase(id);
      this.#log.info({ caseId: id, wasRunning: run !== undefined }, "case deleted");
    } finally {
      this.#deleting.delete(id);
    }
    this.hub.end(id, "deleted");
  }

  /**
   * Resume every unfinished case that no live process holds: free ones (left by a
   * graceful stop), ones whose lease expired (their process died elsewhere), and ones
   * whose holder is known dead (a process on this host that is gone). Each is claimed
   * atomically first, so of several processes starting together each case goes to one.
   * Returns how many this call resumed; concurrent calls share one pass.
   */
  adoptUnfinished(): Promise<number> {
    this.#adopting ??= this.#adoptPass().finally(() => {
      this.#adopting = null;
    });
    return this.#adopting;
  }

  async #adoptPass(): Promise<number> {
    let resumed = 0;
    try {
      const leases = await this.#store.listUnfinishedLeases();
      for (const l of leases) {
        if (this.#closing) break;
        if (this.#runs.has(l.id) || this.#deleting.has(l.id)) continue;
        const now = Date.now();
        const held = l.runner !== null && l.runner !== this.runnerId && l.expiresAtMs !== null && l.expiresAtMs >= now;
        const takeOverFrom = held && isDeadOnThisHost(l.runner!, this.runnerId) ? l.runner! : undefined;
        if (held && !takeOverFrom) continue;
        if (!(await this.#store.claimCase(l.id, this.#lease(now), now, takeOverFrom))) continue;
        const record = await this.#store.getCase(l.id);
        if (!record || isTerminal(record.status) || this.#runs.has(l.id)) continue;
        if (l.runner !== null && l.runner !== this.runnerId) this.#log.info({ caseId: l.id, from: l.runner }, "adopting a case another process left unfinished");
        if (await this.#resume(record)) resumed++;
      }
    } catch (err) {
      this.#log.error({ code: describeError(err).code }, "looking for unfinished cases failed");
    }
    if (resumed) this.#log.info({ resumed }, "resumed unfinished cases");
    return resumed;
  }

  /** Start a claimed case from its checkpoints; a case whose images are gone fails clearly. */
  async #resume(record: CaseRecord): Promise<boolean> {
    let prepared: PreparedCase;
    try {
      prepared = await rebuildPreparedCase(record, this.#store);
    } catch (err) {
      const error = describeError(err);
      this.#log.error({ caseId: record.id, code: error.code }, "cannot resume case");
      await this.#store.setStatus(record.id, "failed", error);
      await this.#append(record.id, "final", { status: "failed", error });
      return false;
    }
    const options = pipelineOptions(this.#config, record.options as Partial<PipelineOptions>);
    this.#start(record, prepared, options, true);
    return true;
  }

  /**
   * Stop: no new cases, in-flight model calls aborted. Their cases keep status
   * "running" and their checkpoints, so the next start resumes them.
   */
  async close(): Promise<void> {
    this.#closing = true;
    for (const t of this.#timers) clearInterval(t);
    this.#timers = [];
    await this.#adopting?.catch(() => undefined);
    const ids = [...this.#runs.keys()];
    const runs = [...this.#runs.values()];
    for (const run of runs) run.controller.abort(new MedmmvError("ABORTED", "server shutting down"));
    await Promise.allSettled(runs.map((r) => r.done));
    await Promise.allSettled([...this.#tails.values()]);
    // Free the interrupted cases, so that a peer (or this server's next start) resumes them at once.
    await this.#store.releaseLeases(this.runnerId, ids).catch((err: unknown) => this.#log.warn({ code: describeError(err).code }, "could not release case leases"));
    liveRunners.delete(this.runnerId);
    this.hub.endAll("shutdown");
  }

  #start(record: CaseRecord, prepared: PreparedCase, options: PipelineOptions, resume: boolean): void {
    const run: CaseRun = {
      controller: new AbortController(),
      tracker: new ProgressTracker(options, prepared.images.length, this.#pipeline.search.enabled),
      done: Promise.resolve(),
      deleted: false,
      lost: false,
    };
    this.#runs.set(record.id, run);
    run.done = this.#execute(record.id, prepared, options, resume, run).finally(() => {
      if (this.#runs.get(record.id) === run) this.#runs.delete(record.id);
    });
  }

  async #execute(id: string, prepared: PreparedCase, options: PipelineOptions, resume: boolean, run: CaseRun): Promise<void> {
    const started = Date.now();
    try {
      if (resume) for (const ev of await this.#store.listEvents(id)) run.tracker.observe(ev.type, ev.data);
      await this.#store.setStatus(id, "running");
      void this.#append(id, "status", resume ? { status: "running", resumed: true } : { status: "running" });
      const { result, fullEvidenceGraph } = await this.#pipeline.run(prepared, options, {
        signal: run.controller.signal,
        resume,
        emit: (type, data) => void this.#append(id, type, data),
      });
      if (run.deleted) return;
      await this.#tails.get(id);
      void this.#append(id, "scores", scoresEvent(result));
      await this.#tails.get(id);
      // The result and its final event are one write: a kill between them cannot leave a
      // finished case without its final event.
      const final = finalEvent(result);
      const event = await this.#store.saveResult(id, result, fullEvidenceGraph, { type: "final", data: final });
      if (event) this.hub.publish(event);
      await this.#pruneCheckpoints(id);
      const progress = this.#runs.get(id)?.tracker.observe("final", final);
      if (progress) await this.#store.setProgress(id, progress);
      this.#log.info({ caseId: id, status: result.status, llmCalls: result.usage.llmCalls, ms: Date.now() - started }, "case finished");
    } catch (err) {
      if (run.deleted) return;
      if (run.lost) return; // the process that holds the case now finishes it
      const error = describeError(err);
      if (this.#closing) {
        this.#log.info({ caseId: id }, "case interrupted by shutdown; it resumes at the next start");
        return;
      }
      this.#log.error({ caseId: id, code: error.code }, "case failed");
      try {
        await this.#tails.get(id);
        await this.#store.setStatus(id, "failed", error);
        await this.#append(id, "final", { status: "failed", error });
        await this.#pruneCheckpoints(id);
      } catch (storeErr) {
        this.#log.error({ caseId: id, code: describeError(storeErr).code }, "could not record the failure");
      }
    }
  }

  /** Best effort: a terminal case never needs them; left behind, they only take space. */
  async #pruneCheckpoints(id: string): Promise<void> {
    try {
      await this.#store.pruneCheckpoints(id);
    } catch (err) {
      this.#log.warn({ caseId: id, code: describeError(err).code }, "could not prune the checkpoints of a finished case");
    }
  }

  #append(id: string, type: string, data: Record<string, unknown>): Promise<void> {
    const prev = this.#tails.get(id) ?? Promise.resolve();
    const next = prev
      .then(async () => {
        const run = this.#runs.get(id);
        if (this.#deleting.has(id) || run?.deleted) return;
        const event = await this.#store.appendEvent(id, type, data);
        this.hub.publish(event);
        const progress = run?.tracker.observe(type, data);
        if (progress) await this.#store.setProgress(id, progress);
      })
      .catch((err: unknown) => {
        this.#log.warn({ caseId: id, event: type, code: describeError(err).code }, "could not record a case event");
      });
    this.#tails.set(id, next);
    void next.then(() => {
      if (this.#tails.get(id) === next) this.#tails.delete(id);
    });
    return next;
  }
}

function scoresEvent(result: DiagnosisResult): Record<string, unknown> {
  return {
    candidates: result.candidates.map((c) => ({
      pathId: c.pathId,
      finalAnswer: c.finalAnswer,
      repairs: c.repairs,
      cu: c.scores?.cu ?? null,
      selected: c.selected,
    })),
    stability: { rgm: result.stability.rgm, entropy: result.stability.entropy, distribution: result.stability.distribution },
  };
}

function finalEvent(result: DiagnosisResult): Record<string, unknown> {
  return {
    status: result.status,
    answer: result.answer,
    answerSupport: result.answerSupport,
    abstentionReason: result.abstentionReason,
    ...(result.error ? { error: result.error } : {}),
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
