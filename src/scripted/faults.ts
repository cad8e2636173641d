/**
 * Fault injection and HTTP plumbing shared by the scripted OpenAI and Tavily servers.
 *
 * Both servers are used by the test suite and by `medmmv demo`, so everything here is
 * node:http only, and close() must end promptly even while a client waits on a hung
 * call: open sockets are destroyed and pending timers cleared, so nothing outlives it.
 */
import http from "node:http";
import type { Socket } from "node:net";
import { performance } from "node:perf_hooks";

import { MedmmvError } from "../core/contracts/errors.js";
import { seededRandom } from "../core/seeded-random.js";

export const FAULT_KINDS = [
  "status",
  "hang",
  "hold",
  "reset",
  "malformed-json",
  "truncated-json",
  "schema-violation",
  "tool-args-not-json",
  "latency",
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export type FaultAction =
  | { kind: "status"; status: number; retryAfterSec?: number; body?: string }
  | { kind: "hang" }
  /** Held until the test lets it go (`releaseHeld`), then answered, or dropped, as the test says. */
  | { kind: "hold" }
  | { kind: "reset" }
  | { kind: "malformed-json" }
  | { kind: "truncated-json" }
  | { kind: "schema-violation" }
  | { kind: "tool-args-not-json" }
  | { kind: "latency"; ms: number };

/** Which calls a fault applies to. Every field given must match. */
export interface FaultMatcher {
  /** Agent name (OpenAI server: the `medmmv-agent:` marker; Tavily server: always "tavily"). */
  agent?: string;
  /** Per-agent call index when `agent` is given, otherwise the server-wide call index. */
  callIndex?: number;
  /** Apply to this many matching calls, then retire. Default: unlimited. */
  times?: number;
  /** Chance of applying to a matching call, drawn from the server's seeded PRNG. */
  probability?: number;
  /** Only calls whose request text (prompt text, or Tavily query) contains this substring. */
  textIncludes?: string;
}

export type Fault = FaultAction & FaultMatcher;

/** How a test lets held calls go: answered as scripted, or their connection dropped. */
export type HeldRelease = "answer" | "drop";

export interface FaultContext {
  agent: string;
  callIndex: number;
  globalIndex: number;
  text: string;
}

/** mulberry32 (core/seeded-random.ts): reproducible probabilistic faults. */
export const createPrng = seededRandom;

function invalidFault(message: string): MedmmvError {
  return new MedmmvError("INVALID_INPUT", `invalid fault: ${message}`);
}

function validateFault(f: Fault): void {
  if (!FAULT_KINDS.includes(f.kind)) throw invalidFault(`unknown kind ${String(f.kind)}`);
  if (f.kind === "status" && !(Number.isInteger(f.status) && f.status >= 100 && f.status <= 599)) {
    throw invalidFault(`status must be an HTTP status code, got ${String(f.status)}`);
  }
  if (f.kind === "status" && f.retryAfterSec !== undefined && !(f.retryAfterSec >= 0)) {
    throw invalidFault("retryAfterSec must be >= 0");
  }
  if (f.kind === "latency" && !(Number.isFinite(f.ms) && f.ms >= 0)) throw invalidFault("latency ms must be >= 0");
  if (f.times !== undefined && !(Number.isInteger(f.times) && f.times >= 0)) throw invalidFault("times must be an integer >= 0");
  if (f.probability !== undefined && !(f.probability >= 0 && f.probability <= 1)) {
    throw invalidFault("probability must be within [0, 1]");
  }
  if (f.callIndex !== undefined && !(Number.isInteger(f.callIndex) && f.callIndex >= 0)) {
    throw invalidFault("callIndex must be an integer >= 0");
  }
}

/**
 * An ordered list of faults; the first one that matches a call applies. The PRNG is
 * drawn only for faults whose other conditions match, so a given sequence of calls
 * always gets the same faults for the same seed.
 */
export class FaultPlan {
  private entries: Array<{ fault: Fault; used: number }> = [];
  private rng: () => number;

  constructor(private readonly seed: number = 1) {
    this.rng = createPrng(seed);
  }

  add(fault: Fault): void {
    validateFault(fault);
    this.entries.push({ fault: { ...fault }, used: 0 });
  }

  clear(): void {
    this.entries = [];
  }

  resetRandom(): void {
    this.rng = createPrng(this.seed);
  }

  pick(ctx: FaultContext): Fault | undefined {
    for (const entry of this.entries) {
      const f = entry.fault;
      if (f.times !== undefined && entry.used >= f.times) continue;
      if (f.agent !== undefined && f.agent !== ctx.agent) continue;
      if (f.callIndex !== undefined && f.callIndex !== (f.agent !== undefined ? ctx.callIndex : ctx.globalIndex)) continue;
      if (f.textIncludes !== undefined && !ctx.text.includes(f.textIncludes)) continue;
      if (f.probability !== undefined && !(this.rng() < f.probability)) continue;
      entry.used++;
      return f;
    }
    return undefined;
  }
}

export function emptyFaultCounts(): Record<FaultKind, number> {
  return Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<FaultKind, number>;
}

/** Whether the script's reply is what a call under this fault sends (as it is, or cut short): none, a latency, a truncation. */
export function keepsScriptedReply(fault: Fault | undefined): boolean {
  return fault === undefined || fault.kind === "latency" || fault.kind === "truncated-json";
}

/**
 * The reply `compose` makes, for a call to send once its wait is over: ask for it then. A
 * provider's latency includes writing its answer, so with `early` (the call waits a latency
 * and will send this reply) it is composed at once, beside the wait, and a burst of calls due
 * together is not answered one script after another past L; a failure waits, unreported,
 * until the reply is asked for. Otherwise it is composed when asked for: a script runs only
 * for a call that gets that far, in the order the suites' scripts and faults always had.
 */
export function composeReply<T>(compose: () => Promise<T>, early: boolean): () => Promise<T> {
  if (!early) return compose;
  const made = compose().then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
  return async () => {
    const r = await made;
    if (!r.ok) throw r.error;
    return r.value;
  };
}

/** Epoch milliseconds with sub-millisecond resolution, so overlapping calls can be ordered. */
export function nowMs(): number {
  return performance.timeOrigin + performance.now();
}

/**
 * One request between "body fully read" and "reply ended or client gone". `signal`
 * aborts when the client disconnects or the server closes, so waits and scripts stop.
 */
export class TrackedCall {
  readonly controller = new AbortController();
  /** We called res.end() (or sent nothing on purpose and dropped the socket). */
  responded = false;
  /** The client closed the connection before we answered. */
  disconnected = false;
  ended = false;

  get signal(): AbortSignal {
    return this.controller.signal;
  }
}

export interface ReadBodyResult {
  ok: boolean;
  body?: Buffer;
  tooLarge?: boolean;
}

export class HttpHarness {
  readonly server: http.Server;
  private readonly sockets = new Set<Socket>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private closing = false;
  private closed?: Promise<void>;
  private inFlightByKey = new Map<string, number>();
  private readonly active = new Set<() => void>();
  private readonly held = new Set<(how: HeldRelease) => void>();
  inFlight = 0;
  peakInFlight = 0;
  peakInFlightByKey = new Map<string, number>();
  disconnects = 0;
  faultsInjected = emptyFaultCounts();

  constructor(handler: (req: http.IncomingMessage, res: http.ServerResponse) => Promise<void>) {
    this.server = http.createServer((req, res) => {
      handler(req, res).catch((err: unknown) => {
        // A bug in a handler must show up as a 500 in the test, not as a hung client.
        if (!res.headersSent && !res.destroyed) {
          const message = err instanceof Error ? err.message : String(err);
          writeJson(res, 500, { error: { message: `scripted server error: ${message}`, type: "server_error", code: null } });
        } else {
          res.destroy();
        }
      });
    });
    this.server.on("connection", (socket) => {
      this.sockets.add(socket);
      socket.on("close", () => this.sockets.delete(socket));
    });
  }

  listen(host = "127.0.0.1"): Promise<number> {
    return new Promise((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(0, host, () => {
        this.server.off("error", reject);
        const addr = this.server.address();
        if (addr === null || typeof addr === "string") {
          reject(new MedmmvError("INTERNAL", "scripted server did not get a TCP port"));
          return;
        }
        resolve(addr.port);
      });
    });
  }

  get isClosing(): boolean {
    return this.closing;
  }

  /** Start counting a call as in flight; `onEnd` runs exactly once when it stops. */
  begin(res: http.ServerResponse, key: string, onEnd: (call: TrackedCall) => void): TrackedCall {
    const call = new TrackedCall();
    this.inFlight++;
    this.peakInFlight = Math.max(this.peakInFlight, this.inFlight);
    const forKey = (this.inFlightByKey.get(key) ?? 0) + 1;
    this.inFlightByKey.set(key, forKey);
    this.peakInFlightByKey.set(key, Math.max(this.peakInFlightByKey.get(key) ?? 0, forKey));

    const finish = (): void => {
      if (call.ended) return;
      call.ended = true;
      this.active.delete(stop);
      this.inFlight--;
      this.inFlightByKey.set(key, (this.inFlightByKey.get(key) ?? 1) - 1);
      onEnd(call);
    };
    const stop = (): void => {
      call.controller.abort();
      finish();
    };
    this.active.add(stop);
    res.once("finish", finish);
    res.once("close", () => {
      if (!call.responded && !this.closing) {
        call.disconnected = true;
        this.disconnects++;
      }
      stop();
    });
    return call;
  }

  /**
   * Wait until `ms` after `since` (nowMs() clock; default now), or less if the call ends first;
   * the timer never outlives close(). A provider's latency runs from the request's arrival, so
   * a caller passes the arrival: the reply is due at arrival + L whatever this server did with
   * the request meanwhile. Never early: a timer counts from the event loop's clock, which can
   * be behind, so the deadline is checked again when it fires. It may fire up to about a
   * millisecond late; waiting out that millisecond in event-loop turns was tried and cost the
   * batch benchmark more (the server process spinning beside the client) than it gained.
   */
  sleep(ms: number, call: TrackedCall, since: number = nowMs()): Promise<void> {
    const deadline = since + ms;
    if (ms <= 0 || call.signal.aborted || nowMs() >= deadline) return Promise.resolve();
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const done = (): void => {
        if (timer) {
          clearTimeout(timer);
          this.timers.delete(timer);
        }
        call.signal.removeEventListener("abort", done);
        resolve();
      };
      const step = (): void => {
        if (timer) this.timers.delete(timer);
        timer = undefined;
        const left = deadline - nowMs();
        if (left <= 0 || call.signal.aborted) {
          done();
        } else {
          timer = setTimeout(step, Math.ceil(left));
          this.timers.add(timer);
        }
      };
      call.signal.addEventListener("abort", done, { once: true });
      step();
    });
  }

  /**
   * Hold a call until releaseHeld() says how it ends. A test that needs a case to stay
   * running while it looks (a page, a stream) holds it for exactly as long as it looks,
   * instead of waiting out a timeout. A call that ends first (client gone, server closed)
   * resolves as "drop".
   */
  private hold(call: TrackedCall): Promise<HeldRelease> {
    if (call.signal.aborted) return Promise.resolve("drop");
    return new Promise((resolve) => {
      const release = (how: HeldRelease): void => {
        this.held.delete(release);
        call.signal.removeEventListener("abort", onAbort);
        resolve(how);
      };
      const onAbort = (): void => release("drop");
      this.held.add(release);
      call.signal.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Let every held call go; how many there were. */
  releaseHeld(how: HeldRelease): number {
    const all = [...this.held];
    for (const release of all) release(how);
    return all.length;
  }

  /** Calls a hold fault is holding now (a test waits for this before it lets them go). */
  get heldCount(): number {
    return this.held.size;
  }

  /**
   * The faults that act on the connection once a call's latency is over, the same on every
   * scripted server: a hold waits for the test (then the call goes on, or its connection drops),
   * a hang never answers, a reset drops the connection. True when the call is over and the
   * route must not answer it.
   */
  async endedByConnectionFault(fault: Fault | undefined, call: TrackedCall, res: http.ServerResponse): Promise<boolean> {
    if (fault?.kind === "hold" && (await this.hold(call)) === "drop") {
      dropConnection(call, res);
      return true;
    }
    if (fault?.kind === "hang") return true; // the client gives up; begin() records the disconnect
    if (fault?.kind === "reset") {
      dropConnection(call, res);
      return true;
    }
    return false;
  }

  resetCounters(): void {
    this.peakInFlight = this.inFlight;
    this.peakInFlightByKey = new Map([...this.inFlightByKey].filter(([, n]) => n > 0));
    this.disconnects = 0;
    this.faultsInjected = emptyFaultCounts();
  }

  close(): Promise<void> {
    if (this.closed) return this.closed;
    this.closing = true;
    this.closed = new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      for (const timer of this.timers) clearTimeout(timer);
      this.timers.clear();
      // Hung calls and idle keep-alive sockets would otherwise hold server.close() open.
      this.server.closeAllConnections();
      for (const socket of this.sockets) socket.destroy();
      // Socket 'close' events arrive later; the calls they end are over now, so say so.
      for (const stop of [...this.active]) stop();
    });
    return this.closed;
  }
}

export function readBody(req: http.IncomingMessage, limitBytes: number): Promise<ReadBodyResult> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (r: ReadBodyResult): void => {
      if (settled) return;
      settled = true;
      resolve(r);
    };
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > limitBytes) {
        settle({ ok: false, tooLarge: true });
        req.resume();
        return;
      }
      if (!settled) chunks.push(chunk);
    });
    req.on("end", () => settle({ ok: true, body: Buffer.concat(chunks) }));
    req.on("error", () => settle({ ok: false }));
    req.on("close", () => settle({ ok: false }));
  });
}

export function writeRaw(
  res: http.ServerResponse,
  status: number,
  body: string,
  headers: Record<string, string> = {},
): void {
  if (res.destroyed || res.writableEnded) return;
  const buf = Buffer.from(body, "utf8");
  res.writeHead(status, {
    "content-type": "application/json",
    ...headers,
    "content-length": String(buf.length),
  });
  res.end(buf);
}

export function writeJson(
  res: http.ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  writeRaw(res, status, JSON.stringify(body), headers);
}

/** Answer a tracked call; marks it answered first so the socket close is not a disconnect. */
export function respond(
  call: TrackedCall,
  res: http.ServerResponse,
  status: number,
  body: string,
  headers: Record<string, string> = {},
): void {
  if (call.signal.aborted) return;
  call.responded = true;
  writeRaw(res, status, body, headers);
}

/** Drop the connection without an answer (the "reset" fault). */
export function dropConnection(call: TrackedCall, res: http.ServerResponse): void {
  call.responded = true;
  res.socket?.destroy();
  res.destroy();
}

/** Text that is not JSON, shaped like a chatty model ignoring the format instruction. */
export const MALFORMED_JSON_TEXT = "Sure! Here is the answer: {oops";

/** Cut a valid JSON text in half, as a reply stopped by max_tokens would be. */
export function truncateJson(text: string): string {
  return text.slice(0, Math.floor(text.length / 2));
}
