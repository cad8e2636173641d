import { fork, type ChildProcess } from "node:child_process";
import type { Config } from "../core/config.js";
import type { PreparedCase } from "../core/contracts/clinical-case.js";
import { describeError, MedmmvError } from "../core/contracts/errors.js";
import type { ResponseCache } from "../core/llm/model-client.js";
import type { EvalItem } from "./datasets/types.js";
import type { ItemMethodSettings } from "./item-methods.js";
import type { FromItemWorker, ToItemWorker } from "./item-worker-protocol.js";
import type { EvalMethod, MethodOutput } from "./methods/types.js";

/** How to start an item process: a script that runs `medmmv` (bin/medmmv.js), and Node's flags for it. */
export interface ItemWorkerEntry {
  script: string;
  execArgv?: string[];
}

/** Replacements for item processes that died, per run, before the run stops replacing them. */
const MAX_RESTARTS = 3;

interface Task {
  resolve: (out: MethodOutput) => void;
  reject: (err: Error) => void;
}

interface ItemProcess {
  child: ChildProcess;
  ready: Promise<void>;
  tasks: Map<number, Task>;
  /** The run's configuration with this process's share of MEDMMV_MAX_CONCURRENCY. */
  config: Config;
  items: number;
  exited: boolean;
}

/** What each item process did, for the run's result (and the tests). */
export interface ItemProcessStats {
  pid: number;
  items: number;
}

/**
 * `medmmv eval --workers N`: the items answered in N processes. One Node process runs its
 * JavaScript on one core, and the full method costs tens of milliseconds of it per item
 * (BENCHMARKS.md), so on a host with more cores the runner's concurrency is bounded by CPU
 * before it is bounded by the model's latency. The runner keeps everything that must be
 * one: the order of the items, results.jsonl (its single writer), the spending limit, the
 * throttle (each process reports the 429s it hears) and the response cache (each process asks
 * for it over IPC). MEDMMV_MAX_CONCURRENCY is split between the processes, so the model never
 * sees more calls in flight than it allows. An item process that dies fails the items it was
 * answering (recorded as failed; `--resume` runs them again) and is replaced, at most
 * MAX_RESTARTS times in a run.
 */
export class ItemWorkerPool {
  private readonly procs: ItemProcess[] = [];
  private nextTask = 0;
  private restarts = 0;
  private closing = false;
  private readonly retired: ItemProcessStats[] = [];

  constructor(
    private readonly o: {
      count: number;
      entry: ItemWorkerEntry;
      config: Config;
      settings: ItemMethodSettings;
      cacheScope: string;
      cache: ResponseCache | null;
      onRateLimited: () => void;
    },
  ) {
    const cap = o.config.llm.maxConcurrency;
    try {
      for (let i = 0; i < o.count; i++) this.procs.push(this.start(Math.floor(cap / o.count) + (i < cap % o.count ? 1 : 0)));
    } catch (err) {
      // A fork that throws leaves no pool for the caller to close: the processes already started go with it, unreplaced.
      this.closing = true;
      for (const p of this.procs) p.child.kill();
      throw err;
    }
  }

  /** The process count a run may use: never more processes than model calls it may have in flight. */
  static size(workers: number, config: Config): number {
    return Math.max(1, Math.min(workers, config.llm.maxConcurrency));
  }

  /** Every process started and set up (rejects with the first one's set-up error). */
  async ready(): Promise<void> {
    await Promise.all(this.procs.map((p) => p.ready));
  }

  /** A method whose items are answered by the least busy item process. */
  method(inner: EvalMethod, item: EvalItem, run: number): EvalMethod {
    return { name: inner.name, prompts: inner.prompts, run: (prepared, signal) => this.run(item, prepared, run, signal) };
  }

  stats(): ItemProcessStats[] {
    return [...this.retired, ...this.procs.map((p) => ({ pid: p.child.pid ?? 0, items: p.items }))];
  }

  /** Every item in flight stops (the eval was cancelled). */
  abort(): void {
    for (const p of this.live()) this.send(p, { type: "abort" });
  }

  /** Closes every process and waits for it to exit. */
  async close(): Promise<void> {
    this.closing = true;
    await Promise.all(
      this.procs.map(
        (p) =>
          new Promise<void>((resolve) => {
            if (p.exited) return resolve();
            p.child.once("exit", () => resolve());
            this.send(p, { type: "close" });
          }),
      ),
    );
  }

  private live(): ItemProcess[] {
    return this.procs.filter((p) => !p.exited);
  }

  private send(p: ItemProcess, m: ToItemWorker): void {
    if (p.child.connected) p.child.send(m);
  }

  private async run(item: EvalItem, prepared: PreparedCase, run: number, signal: AbortSignal): Promise<MethodOutput> {
    if (signal.aborted) throw new MedmmvError("ABORTED", "eval cancelled");
    const live = this.live();
    if (!live.length) throw new MedmmvError("INTERNAL", "every item process of this run has exited; --resume runs the remaining items");
    const p = live.reduce((a, b) => (b.tasks.size < a.tasks.size ? b : a));
    const task = this.nextTask++;
    const result = new Promise<MethodOutput>((resolve, reject) => p.tasks.set(task, { resolve, reject }));
    // A process that exits before it is set up rejects both its set-up and this task; the caller
    // then hears the set-up's error below, and the task's own rejection must not go unhandled
    // (Node ends the eval on an unhandled rejection).
    result.catch(() => undefined);
    try {
      await p.ready;
    } catch (err) {
      p.tasks.delete(task);
      throw err;
    }
    this.send(p, { type: "run", task, item, prepared, run });
    return result;
  }

  private start(maxConcurrency: number): ItemProcess {
    const config: Config = { ...this.o.config, llm: { ...this.o.config.llm, maxConcurrency } };
    const child = fork(this.o.entry.script, ["eval-worker"], {
      execArgv: this.o.entry.execArgv ?? process.execArgv,
      serialization: "advanced",
      // stdout is the eval's (its --json summary): an item process says what it has to say on stderr.
      stdio: ["ignore", "ignore", "inherit", "ipc"],
    });
    const p: ItemProcess = { child, ready: Promise.resolve(), tasks: new Map(), config, items: 0, exited: false };
    let settle!: { resolve: () => void; reject: (e: Error) => void };
    p.ready = new Promise<void>((resolve, reject) => (settle = { resolve, reject }));
    // A process that never got ready fails its waiters through this promise; nobody else awaits it.
    p.ready.catch(() => undefined);
    child.on("message", (m: FromItemWorker) => this.onMessage(p, m, settle));
    child.on("error", (err) => settle.reject(new MedmmvError("INTERNAL", `an item process could not start: ${describeError(err).message}`)));
    child.on("exit", (code, signal) => this.onExit(p, code, signal, settle));
    return p;
  }

  private onMessage(p: ItemProcess, m: FromItemWorker, settle: { resolve: () => void; reject: (e: Error) => void }): void {
    switch (m.type) {
      case "started":
        this.send(p, { type: "init", config: p.config, settings: this.o.settings, cacheScope: this.o.cacheScope, cached: this.o.cache !== null });
        break;
      case "ready":
        settle.resolve();
        break;
      case "initFailed":
        settle.reject(new MedmmvError(m.error.code, m.error.message));
        break;
      case "done":
      case "threw": {
        const t = p.tasks.get(m.task);
        p.tasks.delete(m.task);
        if (m.type === "done") {
          p.items++;
          t?.resolve(m.out);
        } else t?.reject(new MedmmvError(m.error.code, m.error.message));
        break;
      }
      case "cacheGet": {
        const cache = this.o.cache;
        if (!cache) return this.send(p, { type: "cacheValue", req: m.req, value: null });
        cache.get(m.key).then(
          (value) => this.send(p, { type: "cacheValue", req: m.req, value }),
          (err: unknown) => this.send(p, { type: "cacheValue", req: m.req, value: null, error: describeError(err).message, ...((err as MedmmvError).details?.["replayMiss"] === true ? { replayMiss: true } : {}) }),
        );
        break;
      }
      case "cachePut":
        // As in one process: a put that fails costs a later hit, never the answer.
        this.o.cache?.put(m.key, m.value).catch(() => undefined);
        break;
      case "rateLimited":
        this.o.onRateLimited();
        break;
    }
  }

  private onExit(p: ItemProcess, code: number | null, signal: NodeJS.Signals | null, settle: { reject: (e: Error) => void }): void {
    p.exited = true;
    const why = `an item process (pid ${p.child.pid}) exited (${signal ?? `code ${code}`})`;
    settle.reject(new MedmmvError("INTERNAL", `${why} before it was set up`));
    for (const t of p.tasks.values()) t.reject(new MedmmvError("INTERNAL", `${why} while answering this item; --resume runs it again`));
    p.tasks.clear();
    if (this.closing || this.restarts >= MAX_RESTARTS) return;
    this.restarts++;
    let replacement: ItemProcess;
    try {
      replacement = this.start(p.config.llm.maxConcurrency);
    } catch (err) {
      // Thrown in an exit handler, a failed fork would end the eval: the run goes on with the processes it has
      // (none left: each item then fails, and --resume runs it again).
      process.emitWarning(`an item process could not be replaced: ${describeError(err).message}`, { code: "MEDMMV_ITEM_PROCESS_NOT_REPLACED" });
      return;
    }
    this.retired.push({ pid: p.child.pid ?? 0, items: p.items });
    this.procs[this.procs.indexOf(p)] = replacement;
  }
}
