import { Worker } from "node:worker_threads";

/**
 * The DICOM decoding workers of a process: a small pool of threads, each with V8 heap limits,
 * a time limit per object, and a fresh thread after a limit is hit or its codecs' WebAssembly
 * memory passes a bound (WebAssembly memory grows and never shrinks, so a thread that once
 * decoded something huge would otherwise keep that memory, and its failures, for every later
 * object). Objects wait in one queue per tenant, served in turn, so one tenant's many or slow
 * objects cannot make another's wait more than one object's time limit per worker.
 *
 * A thread holds the event loop only while it has an object: idle threads are unref'd (a CLI
 * command ends when its work does) and ended after IDLE_MS.
 */
export interface DecodePoolOptions {
  /** Threads decoding at once. */
  size: number;
  /** Most milliseconds one object may hold a thread (parse, check and every rendering). */
  objectTimeoutMs: number;
  /** V8 old-generation heap of a thread, MB (resourceLimits). */
  heapMb: number;
  /** WebAssembly memory of a thread past which it is replaced after its object, bytes. */
  maxWasmBytes: number;
}

export const DEFAULT_DECODE_POOL: DecodePoolOptions = { size: 2, objectTimeoutMs: 15_000, heapMb: 768, maxWasmBytes: 512 * 1024 * 1024 };

/** How long an idle thread is kept (its codecs are ready) before it is ended. */
const IDLE_MS = 30_000;

/** Why a thread could not finish an object: a limit, or the thread itself. */
export class DecodeWorkerFailure extends Error {
  constructor(
    readonly kind: "timeout" | "memory" | "crashed" | "unclonable",
    message: string,
  ) {
    super(message);
  }
}

export interface WorkerReply {
  id: number;
  ok: boolean;
  error?: string;
  /** Bytes of the thread's WebAssembly memory after the job. */
  wasmBytes?: number;
  /** A codec of the thread has trapped (its WebAssembly state is not trusted again). */
  trapped?: boolean;
  [k: string]: unknown;
}

/** A thread lent to one object: ask it questions until the lease ends. */
export interface DecodeLease {
  ask(message: Record<string, unknown>, transfer?: ArrayBuffer[]): Promise<WorkerReply>;
}

interface Slot {
  worker: Worker;
  busy: boolean;
  idleTimer: NodeJS.Timeout | null;
  wasmBytes: number;
  /** A codec trapped in this thread: it is replaced after its object. */
  trapped: boolean;
  /** The reply awaited now (one question at a time per lease). */
  waiting: { resolve: (r: WorkerReply) => void; reject: (e: Error) => void } | null;
  /** Set once the thread failed or must not take another object. */
  retired: boolean;
}

interface Waiter {
  grant: (slot: Slot) => void;
}

let options: DecodePoolOptions = { ...DEFAULT_DECODE_POOL };
const slots: Slot[] = [];
/** Waiting objects, one queue per tenant; `turns` is the order tenants are served in. */
const queues = new Map<string, Waiter[]>();
const turns: string[] = [];

/** Set the pool's limits (from the service's config); threads started later use them. */
export function configureDecodePool(o: Partial<DecodePoolOptions>): void {
  options = { ...options, ...o };
}

function startSlot(): Slot {
  const worker = new Worker(new URL("./render-worker.mjs", import.meta.url), {
    resourceLimits: { maxOldGenerationSizeMb: options.heapMb, maxYoungGenerationSizeMb: 32, stackSizeMb: 4 },
  });
  const slot: Slot = { worker, busy: false, idleTimer: null, wasmBytes: 0, trapped: false, waiting: null, retired: false };
  const fail = (e: DecodeWorkerFailure) => {
    retire(slot);
    const w = slot.waiting;
    slot.waiting = null;
    w?.reject(e);
  };
  worker.on("message", (r: WorkerReply) => {
    if (typeof r.wasmBytes === "number") slot.wasmBytes = r.wasmBytes;
    if (r.trapped === true) slot.trapped = true;
    const w = slot.waiting;
    slot.waiting = null;
    w?.resolve(r);
  });
  // A reply that cannot be deserialised would otherwise leave its job waiting for ever.
  worker.on("messageerror", () => fail(new DecodeWorkerFailure("unclonable", "the decoder's answer could not be read back")));
  worker.on("error", (e: Error & { code?: string }) =>
    fail(e.code === "ERR_WORKER_OUT_OF_MEMORY" ? new DecodeWorkerFailure("memory", `the object needs more than the decoder's ${options.heapMb} MB heap`) : new DecodeWorkerFailure("crashed", "the decoder failed")),
  );
  worker.on("exit", () => fail(new DecodeWorkerFailure("crashed", "the decoder stopped")));
  // After the listeners: adding a "message" listener refs the thread's port again.
  worker.unref();
  slots.push(slot);
  return slot;
}

/** Take a thread out of service and end it; its current job, if any, fails. */
function retire(slot: Slot): void {
  if (slot.retired) return;
  slot.retired = true;
  if (slot.idleTimer) clearTimeout(slot.idleTimer);
  const at = slots.indexOf(slot);
  if (at !== -1) slots.splice(at, 1);
  void slot.worker.terminate().catch(() => undefined);
}

function freeSlot(): Slot | null {
  const idle = slots.find((s) => !s.busy && !s.retired);
  if (idle) return idle;
  return slots.length < options.size ? startSlot() : null;
}

/** Give free threads to waiting objects, one tenant after another. */
function dispatch(): void {
  while (turns.length > 0) {
    const slot = freeSlot();
    if (!slot) return;
    const tenant = turns.shift()!;
    const queue = queues.get(tenant)!;
    const waiter = queue.shift()!;
    if (queue.length > 0) turns.push(tenant);
    else queues.delete(tenant);
    slot.busy = true;
    if (slot.idleTimer) clearTimeout(slot.idleTimer);
    slot.idleTimer = null;
    slot.worker.ref();
    waiter.grant(slot);
  }
}

function release(slot: Slot): void {
  slot.busy = false;
  if (!slot.retired) {
    // A codec that trapped left its WebAssembly stack and heap mid-call: the thread is not lent again.
    if (slot.wasmBytes > options.maxWasmBytes || slot.trapped) retire(slot);
    else {
      slot.worker.unref();
      slot.idleTimer = setTimeout(() => retire(slot), IDLE_MS);
      slot.idleTimer.unref();
    }
  }
  dispatch();
}

/**
 * Run `work` with a thread of the pool, after the objects of other tenants queued before it
 * had their turn. Past `objectTimeoutMs` the thread is ended, so the object's work stops
 * there, and `work`'s pending question fails with a DecodeWorkerFailure("timeout"); when
 * `signal` aborts (the case was refused or cancelled) the same happens at once, and an object
 * still waiting leaves the queue.
 */
export async function withDecodeWorker<T>(tenant: string, work: (lease: DecodeLease) => Promise<T>, signal?: AbortSignal): Promise<T> {
  signal?.throwIfAborted();
  const slot = await new Promise<Slot>((grant, reject) => {
    const waiter: Waiter = {
      grant: (s) => {
        signal?.removeEventListener("abort", leave);
        grant(s);
      },
    };
    // The case was refused or cancelled while this object waited: it leaves the queue unserved.
    const leave = () => {
      const queue = queues.get(tenant);
      const at = queue?.indexOf(waiter) ?? -1;
      if (at !== -1) queue!.splice(at, 1);
      if (queue?.length === 0) {
        queues.delete(tenant);
        turns.splice(turns.indexOf(tenant), 1);
      }
      reject(signal!.reason);
    };
    signal?.addEventListener("abort", leave, { once: true });
    const queue = queues.get(tenant);
    if (queue) queue.push(waiter);
    else {
      queues.set(tenant, [waiter]);
      turns.push(tenant);
    }
    dispatch();
  });
  let stopped: Error | null = null;
  /** End the object's work now: its thread is ended (decoding stops there) and its pending question fails. */
  const stop = (e: Error) => {
    if (stopped) return;
    stopped = e;
    const w = slot.waiting;
    slot.waiting = null;
    retire(slot);
    w?.reject(e);
  };
  const timer = setTimeout(() => stop(new DecodeWorkerFailure("timeout", `decoding took longer than ${options.objectTimeoutMs} ms`)), options.objectTimeoutMs);
  // A refused or cancelled case stops its decoding at once, not after the object's time limit.
  const onAbort = () => stop(signal!.reason instanceof Error ? signal!.reason : new Error("aborted"));
  signal?.addEventListener("abort", onAbort, { once: true });
  const lease: DecodeLease = {
    ask(message, transfer = []) {
      if (stopped) return Promise.reject(stopped);
      if (slot.retired) return Promise.reject(new DecodeWorkerFailure("crashed", "the decoder stopped"));
      return new Promise<WorkerReply>((resolve, reject) => {
        slot.waiting = { resolve, reject };
        slot.worker.postMessage(message, transfer);
      });
    },
  };
  try {
    return await work(lease);
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", onAbort);
    release(slot);
  }
}

/** Threads now running (for tests and metrics). */
export function decodePoolSize(): number {
  return slots.length;
}
