import type { Logger } from "pino";
import { assertLlmConfigured, type Config } from "../../core/config.js";
import { configureDecodePool } from "../../core/intake/dicom/decode-pool.js";
import { prepareCase } from "../../core/intake/case-intake.js";
import { intakeSettings } from "../../core/intake/intake-settings.js";
import type { ClinicalCase, PreparedCase } from "../../core/contracts/clinical-case.js";
import type { DiagnosisResult } from "../../core/contracts/diagnosis-result.js";
import { MedmmvError, describeError, isMedmmvError } from "../../core/contracts/errors.js";
import { pipelineOptions, type Pipeline } from "../../core/workflow/pipeline.js";
import { caseBudgetFor } from "../../core/workflow/case-budget.js";
import type { PipelineOptions } from "../../core/workflow/state.js";
import {
  TERMINAL_STATUSES,
  type CaseEvent,
  type CaseRecord,
  type CaseStatus,
  type CaseStore,
  type CaseSummary,
  type ListCasesQuery,
} from "../store/case-store.js";
import { rebuildPreparedCase, requestHash, toStoredInput } from "./stored-case.js";
import { EventHub, type CaseListener } from "./event-hub.js";
import type { AgentDeps } from "../../core/agents/agent-context.js";
import { ProgressTracker } from "./progress.js";
import type { CaseEngine, RunOutcome } from "../engine/case-engine.js";
import { openEngine } from "../engine/open-engine.js";
import type { ServiceMetrics } from "../engine/service-metrics.js";

/** Per-request pipeline settings a client may choose (bounded by the route schema). */
export interface CaseOverrides {
  k?: number;
  maxRepairs?: number;
  adaptive?: boolean;
  /** Compose the verified reply of an open-ended question (default MEDMMV_COMPOSE_REPLY). */
  composeReply?: boolean;
  /** The case's budget; each limit defaults to the server's (MEDMMV_CASE_MAX_*). */
  maxTokens?: number;
  maxCostUsd?: number;
}

export interface SubmitRequest {
  /** sha256 of the caller's API key: the case belongs to it. */
  owner: string;
  /** The caller's team (default: the owner) and its key id, stored with the case. */
  tenant?: string;
  submittedBy?: string;
  input: ClinicalCase;
  /**
   * Whose standing a DICOMweb fetch may use without a token in the reference: "ehr" for a
   * call the EHR signed (CDS Hooks JWT); otherwise the caller's own token is required.
   */
  pacsStanding?: "ehr" | "caller";
  overrides?: CaseOverrides;
  idempotencyKey?: string | null;
  /** The request's abort (the client went away): the case's image fetches and decodes stop. */
  signal?: AbortSignal;
}

/**
 * Which cases a caller may reach: those of its tenant, and of those only its own (`owner`)
 * unless `wholeTenant` (an auditor's reads, an admin's deletes).
 */
export interface CaseScope {
  owner: string;
  tenant: string;
  wholeTenant: boolean;
}

export const inScope = (scope: CaseScope, record: Pick<CaseRecord, "owner" | "tenant">): boolean =>
  record.tenant === scope.tenant && (scope.wholeTenant || record.owner === scope.owner);

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
  /** Where the case figures go for GET /metrics (none: not counted). */
  metrics?: ServiceMetrics;
}

interface CaseRun {
  controller: AbortController;
  tracker: ProgressTracker;
  done: Promise<void>;
  deleted: boolean;
  /** The engine took the case back (its job lock was lost): another run goes on from the checkpoint; stop quietly. */
  lost: boolean;
  /** The store went away under the run (a database restart): the engine runs the case again later. */
  outage: boolean;
}

/** Connection-level failures of the store (server restarting, connection cut), along the cause chain. */
const OUTAGE_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "57P01", "57P02", "57P03", "08000", "08003", "08006"]);
function isStoreOutage(err: unknown): boolean {
  for (let e = err, depth = 0; e && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && OUTAGE_CODES.has(code)) return true;
    if (e instanceof Error && /Connection terminated|terminating connection|Client has encountered a connection error|the database system is (starting up|shutting down)/i.test(e.message)) return true;
  }
  return false;
}

export function isTerminal(status: CaseStatus): boolean {
  return TERMINAL_STATUSES.includes(status);
}

/** How long DELETE waits for an aborted run to unwind before purging anyway. */
const DELETE_UNWIND_MS = 10_000;

/**
 * Accepting, running, resuming and cancelling cases. Every accepted case is committed to
 * the store before it is handed to the case engine (src/server/engine/), which decides where
 * it runs: in this process (no REDIS_URL) or on whichever replica's BullMQ worker takes it.
 * Its events are appended to the store in emission order and then fanned out, across
 * replicas through the engine; the pipeline checkpoints into the same store, so a case cut
 * off by a crash or a shutdown resumes from its checkpoint, here or on another replica.
 * Every start of a run is counted in the store first: past MEDMMV_MAX_RUN_STARTS the case is
 * failed with RUN_CRASHED instead of being run again (the crash quarantine). Runs are
 * detached from HTTP requests: a client that hangs up does not cancel its case, only DELETE does.
 */
export class CaseService {
  readonly hub = new EventHub();
  readonly #config: Config;
  readonly #store: CaseStore;
  readonly #pipeline: Pipeline;
  readonly #log: Logger;
  readonly #engine: CaseEngine;
  readonly #metrics: ServiceMetrics | null;
  readonly #runs = new Map<string, CaseRun>();
  /** Each case's run as the engine asked for it, from its first step (before the store is read). */
  readonly #active = new Map<string, Promise<RunOutcome>>();
  /** Per-case write queue: events and progress land in the order they were emitted. */
  readonly #tails = new Map<string, Promise<void>>();
  readonly #deleting = new Set<string>();
  #closing = false;
  #started: Promise<void> | null = null;

  /** The service on the engine its config names (opening it may load BullMQ: src/server/engine/open-engine.ts). */
  static async open(deps: CaseServiceDeps): Promise<CaseService> {
    // The engine gives a case up only once it runs cases, after start(): the service exists by then.
    let service: CaseService | null = null;
    const engine = await openEngine(deps.config.engine, {
      store: deps.store,
      logger: deps.logger,
      onGiveUp: (id, reason) => service!.#quarantine(id, reason),
    });
    service = new CaseService(deps, engine);
    return service;
  }

  private constructor(deps: CaseServiceDeps, engine: CaseEngine) {
    this.#config = deps.config;
    configureDecodePool(deps.config.images.decodePool);
    this.#store = deps.store;
    this.#pipeline = deps.pipeline;
    this.#log = deps.logger;
    this.#metrics = deps.metrics ?? null;
    this.#engine = engine;
    this.#engine.onEvent((event) => this.hub.publish(event));
    this.#engine.onDeleted((id) => this.#onDeleted(id));
  }

  /** Which engine runs the cases: "local" (this process) or "bullmq" (replicas on Redis). */
  get engine(): CaseEngine {
    return this.#engine;
  }

  /** Start running cases: this process's unfinished ones at once (local), or the queue's (BullMQ). */
  start(): Promise<void> {
    if (this.#closing) return Promise.resolve();
    this.#started ??= this.#engine.start((id, signal) => this.#runCase(id, signal)).catch((err: unknown) => {
      this.#log.error({ code: describeError(err).code }, "the case engine did not start; cases wait until it does");
    });
    return this.#started;
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
    const settings = intakeSettings(this.#config);
    const prepared = await prepareCase(withClientId, {
      ...settings,
      // An API-key caller uses its own token for the PACS; an EHR that signed its call is trusted with it.
      dicomweb: { ...settings.dicomweb, ...(req.pacsStanding === "ehr" ? {} : { tokenlessServers: this.#config.images.dicomwebTenantServers[req.owner] ?? [] }) },
      tenant: req.owner,
      allowPath: false,
      ...(req.signal ? { signal: req.signal } : {}),
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
        tenant: req.tenant ?? req.owner,
        submittedBy: req.submittedBy ?? "",
        input: stored,
        options: options as unknown as Record<string, unknown>,
        idempotencyKey: key,
        requestHash: hash,
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
    this.#metrics?.casesAccepted.inc();
    await this.#append(record.id, "status", { status: "queued" });
    // Committed first: a case the engine never heard of (Redis down right now) is queued by its reconciler.
    await this.#engine.enqueue(record.id).catch((err: unknown) => this.#log.warn({ caseId: record.id, code: describeError(err).code }, "could not queue the case now; the reconciler queues it"));
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

  /**
   * Resolves when the case's run ends (finished, failed, or interrupted by shutdown): here, or
   * with the BullMQ engine on whichever replica runs it (its final event comes through Redis).
   */
  async wait(id: string): Promise<CaseRecord | null> {
    await this.#active.get(id)?.catch(() => undefined);
    const run = this.#runs.get(id);
    if (run) await run.done;
    await this.#tails.get(id);
    if (this.#engine.kind === "bullmq" && !this.#closing) await this.#finalSeen(id);
    return this.#store.getCase(id);
  }

  /** Until the case's final event (or its stream's end); subscribed before the store is read, so none is missed. */
  async #finalSeen(id: string): Promise<void> {
    let unsubscribe = (): void => undefined;
    const seen = new Promise<void>((resolve) => {
      unsubscribe = this.hub.subscribe(id, { onEvent: (e) => e.type === "final" && resolve(), onEnd: () => resolve() });
    });
    try {
      const now = await this.#store.getCase(id);
      if (!now || isTerminal(now.status)) return;
      await seen;
    } finally {
      unsubscribe();
    }
  }

  /**
   * The case if `scope` may see it: a case of its tenant, and its own unless it sees the
   * whole tenant; otherwise NOT_FOUND, so ids of others' cases are not confirmed.
   */
  async get(scope: CaseScope, id: string): Promise<CaseRecord> {
    const record = await this.#store.getCase(id);
    if (!record || !inScope(scope, record)) throw new MedmmvError("NOT_FOUND", `case ${id} not found`);
    return record;
  }

  /** A search within `scope`: the tenant's cases, or only its own. */
  list(scope: CaseScope, q: Omit<ListCasesQuery, "tenant" | "owner">): Promise<{ items: CaseSummary[]; nextCursor: string | null }> {
    return this.#store.listCases({ ...q, tenant: scope.tenant, ...(scope.wholeTenant ? {} : { owner: scope.owner }) });
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
  async delete(scope: CaseScope, id: string): Promise<void> {
    await this.get(scope, id);
    await this.purge(id);
  }

  /** Purge a case whoever owns it (retention's sweep; the HTTP routes go through `delete`). */
  async purge(id: string): Promise<void> {
    this.#deleting.add(id);
    try {
      // Every replica hears it: the one running the case stops its calls there.
      await this.#engine.publishDeleted(id).catch((err: unknown) => this.#log.warn({ caseId: id, code: describeError(err).code }, "could not tell the other replicas about a deletion"));
      const run = this.#runs.get(id);
      if (run) await Promise.race([run.done, sleep(DELETE_UNWIND_MS)]);
      await this.#tails.get(id);
      await this.#store.deleteCase(id);
      this.#log.info({ caseId: id, wasRunning: run !== undefined }, "case deleted");
    } finally {
      this.#deleting.delete(id);
    }
    this.hub.end(id, "deleted");
  }

  /** A deletion, here or on another replica: stop this process's run of the case, end its streams here. */
  #onDeleted(id: string): void {
    const run = this.#runs.get(id);
    if (run) {
      run.deleted = true;
      run.controller.abort(new MedmmvError("ABORTED", "case deleted"));
    }
    if (!this.#deleting.has(id)) this.hub.end(id, "deleted");
  }

  /**
   * One run of a case, as the engine asks for it: count the start in the store first (the
   * crash quarantine), then run it fresh or from its checkpoint. "handed-back" when a
   * graceful stop cut it off (that start is taken back: it did not crash).
   */
  #runCase(id: string, signal: AbortSignal): Promise<RunOutcome> {
    // Registered before the first await, so wait() right after submit sees the run coming.
    const p = this.#runCaseSteps(id, signal);
    this.#active.set(id, p);
    void p.catch(() => undefined).finally(() => {
      if (this.#active.get(id) === p) this.#active.delete(id);
    });
    return p;
  }

  async #runCaseSteps(id: string, signal: AbortSignal): Promise<RunOutcome> {
    if (this.#closing) return "handed-back";
    if (this.#runs.has(id) || this.#deleting.has(id)) return "done";
    const record = await this.#store.getCase(id);
    if (!record || isTerminal(record.status)) return "done";
    const starts = await this.#store.countRunStart(id);
    if (starts === null) return "done";
    const limit = this.#config.engine.maxRunStarts;
    if (starts > limit) {
      await this.#quarantine(id, `its run started ${limit} times and never finished`);
      return "done";
    }
    let prepared: PreparedCase;
    try {
      prepared = await rebuildPreparedCase(record, this.#store);
    } catch (err) {
      const error = describeError(err);
      this.#log.error({ caseId: id, code: error.code }, "cannot run case");
      if (await this.#store.setStatus(id, "failed", error)) await this.#append(id, "final", { status: "failed", error });
      return "done";
    }
    if (starts === 1) this.#metrics?.queueWait.observe(Math.max(0, Date.now() - Date.parse(record.createdAt)) / 1000);
    const resume = starts > 1 || record.status === "running";
    this.#log.info({ caseId: id, starts, resume }, resume ? "resuming a case from its checkpoint" : "case run started");
    const options = pipelineOptions(this.#config, record.options as Partial<PipelineOptions>);
    const run = this.#start(id, prepared, options, resume);
    const onLost = (): void => {
      run.lost = true;
      run.controller.abort(new MedmmvError("ABORTED", "the engine took this case back"));
    };
    if (signal.aborted) onLost();
    else signal.addEventListener("abort", onLost, { once: true });
    try {
      await run.done;
    } finally {
      signal.removeEventListener("abort", onLost);
    }
    if (run.outage && !this.#closing) throw new MedmmvError("STORE_FAILED", "the store went away mid-case", { retryable: true });
    if (this.#closing && !run.deleted && !run.lost && !(await this.#isTerminal(id))) {
      await this.#store.uncountRunStart(id).catch(() => undefined);
      return "handed-back";
    }
    return "done";
  }

  async #isTerminal(id: string): Promise<boolean> {
    const now = await this.#store.getCase(id).catch(() => null);
    return now === null || isTerminal(now.status);
  }

  /**
   * The crash quarantine: a case whose run keeps ending with its process (or replica) gone is
   * failed with RUN_CRASHED, and its owner reads why; nothing runs it again.
   */
  async #quarantine(id: string, why: string): Promise<void> {
    if (await this.#isTerminal(id)) return;
    const error = {
      code: "RUN_CRASHED",
      message: `this case was stopped: ${why} (each time the process running it stopped mid-case, e.g. out of memory). It is not run again; check its input (very large pathways or images) and submit it anew.`,
    };
    this.#log.error({ caseId: id, code: error.code, limit: this.#config.engine.maxRunStarts }, "case quarantined: its run kept stopping its process");
    this.#metrics?.casesQuarantined.inc();
    await this.#tails.get(id);
    if (await this.#store.setStatus(id, "failed", error)) await this.#append(id, "final", { status: "failed", error });
    await this.#pruneCheckpoints(id);
  }

  /**
   * Stop: no new cases, in-flight model calls aborted. Their cases keep status
   * "running" and their checkpoints, so the next start resumes them.
   */
  async close(): Promise<void> {
    this.#closing = true;
    await this.#started?.catch(() => undefined);
    const runs = [...this.#runs.values()];
    for (const run of runs) run.controller.abort(new MedmmvError("ABORTED", "server shutting down"));
    await Promise.allSettled(runs.map((r) => r.done));
    await Promise.allSettled([...this.#tails.values()]);
    // The engine hands the interrupted cases back (BullMQ: to the queue at once, for a peer).
    await this.#engine.close();
    this.hub.endAll("shutdown");
  }

  #start(id: string, prepared: PreparedCase, options: PipelineOptions, resume: boolean): CaseRun {
    const run: CaseRun = {
      controller: new AbortController(),
      tracker: new ProgressTracker(options, prepared.images.length, this.#pipeline.search.enabled),
      done: Promise.resolve(),
      deleted: false,
      lost: false,
      outage: false,
    };
    this.#runs.set(id, run);
    run.done = this.#execute(id, prepared, options, resume, run).finally(() => {
      if (this.#runs.get(id) === run) this.#runs.delete(id);
    });
    return run;
  }

  async #execute(id: string, prepared: PreparedCase, options: PipelineOptions, resume: boolean, run: CaseRun): Promise<void> {
    const started = Date.now();
    try {
      if (resume) for (const ev of await this.#store.listEvents(id)) run.tracker.observe(ev.type, ev.data);
      // Finished meanwhile elsewhere (a peer that ran a duplicate of this job): nothing to do.
      if (!(await this.#store.setStatus(id, "running"))) return;
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
      if (!event) {
        this.#log.warn({ caseId: id }, "the case was finished by another run meanwhile; its first result stands");
        return;
      }
      this.#engine.publishEvent(event);
      await this.#pruneCheckpoints(id);
      const progress = this.#runs.get(id)?.tracker.observe("final", final);
      if (progress) await this.#store.setProgress(id, progress);
      this.#log.info({ caseId: id, status: result.status, llmCalls: result.usage.llmCalls, ms: Date.now() - started }, "case finished");
      this.#metrics?.recordFinished(result, Date.now() - started);
    } catch (err) {
      if (run.deleted) return;
      if (run.lost) return; // the replica that holds the case now finishes it
      const error = describeError(err);
      if (isStoreOutage(err)) {
        // Not the case's fault: it stays unfinished with its checkpoints and runs again.
        run.outage = true;
        this.#log.warn({ caseId: id, code: error.code }, "the store went away mid-case; the case runs again from its checkpoint");
        return;
      }
      if (this.#closing) {
        this.#log.info({ caseId: id }, "case interrupted by shutdown; it resumes at the next start (or on a peer) from its checkpoint");
        return;
      }
      this.#log.error({ caseId: id, code: error.code }, "case failed");
      try {
        await this.#tails.get(id);
        if (await this.#store.setStatus(id, "failed", error)) await this.#append(id, "final", { status: "failed", error });
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
        const progress = run?.tracker.observe(type, data);
        const event = await this.#store.appendEvent(id, type, data, progress ?? undefined);
        this.#engine.publishEvent(event);
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
