import { setMaxListeners } from "node:events";
import { setTimeout as sleep } from "node:timers/promises";
import { MedmmvError, type ErrorCode } from "../contracts/errors.js";
import { retryInfoDelayMs } from "./rate-limit-hints.js";

/**
 * The one retry layer of the service (the SDK's own retries are off: maxRetries 0).
 * Exponential backoff with full jitter, honouring Retry-After, a per-attempt timeout,
 * and the caller's abort signal passed down to the HTTP request.
 */
export interface RetryPolicy {
  maxAttempts: number;
  baseDelayMs: number;
  /** A Retry-After longer than this fails the call at once (retryable), instead of parking the case. */
  maxRetryAfterMs: number;
  timeoutMs: number;
  /** Injected for tests of the jitter; defaults to Math.random. */
  random?: () => number;
  /**
   * The code of the final failure when the caller is not a model call (e.g. SEARCH_FAILED),
   * so provenance names the right dependency; `retryable` still tells transient from fatal.
   */
  failureCode?: ErrorCode;
}

export interface AttemptInfo {
  attempt: number; // 1-based
  signal: AbortSignal;
}

export interface ClassifiedError {
  retryable: boolean;
  retryAfterMs: number | null;
  status: number | null;
  timeout: boolean;
  aborted: boolean;
  message: string;
}

/** Read an HTTP status and Retry-After from an error: the OpenAI SDK's APIError (what ChatOpenAI throws), a fetch-style error with a response, or an AWS SDK service exception. */
export function classifyError(err: unknown, parentAborted: boolean): ClassifiedError {
  const e = err as Record<string, unknown> & { name?: string; message?: string; cause?: unknown };
  // The AWS SDK's service exceptions (Bedrock's ValidationException, ThrottlingException…) carry theirs in $metadata.httpStatusCode.
  const status = numberOrNull(e?.status) ?? numberOrNull((e?.response as Record<string, unknown> | undefined)?.status) ?? numberOrNull((e?.$metadata as Record<string, unknown> | undefined)?.httpStatusCode);
  const headers = (e?.headers ?? (e?.response as Record<string, unknown> | undefined)?.headers) as unknown;
  // Gemini's own SDK throws without the reply's headers but keeps its body's `error.details`: a RetryInfo there is the wait.
  const retryAfterMs =
    parseRetryAfter(readHeader(headers, "retry-after-ms"), true) ??
    parseRetryAfter(readHeader(headers, "retry-after"), false) ??
    (status === 429 && Array.isArray(e?.errorDetails) ? retryInfoDelayMs({ error: { details: e.errorDetails } }) : null);
  const name = String(e?.name ?? "");
  const message = String(e?.message ?? err).slice(0, 300);
  if (parentAborted) return { retryable: false, retryAfterMs: null, status, timeout: false, aborted: true, message: "aborted" };
  const timeout = name === "TimeoutError" || name === "APIConnectionTimeoutError" || /timed? ?out/i.test(message);
  const abortLike = name === "AbortError" || name === "APIUserAbortError";
  if (err instanceof MedmmvError) return { retryable: err.retryable, retryAfterMs: null, status, timeout: err.code === "LLM_TIMEOUT", aborted: err.code === "ABORTED", message };
  if (status !== null) {
    const retryable = status === 408 || status === 409 || status === 429 || status >= 500;
    return { retryable, retryAfterMs, status, timeout: false, aborted: false, message };
  }
  // No status: connection reset, refused, DNS, timeout — all transient from our side.
  return { retryable: true, retryAfterMs: null, status: null, timeout: timeout || abortLike, aborted: false, message };
}

function numberOrNull(v: unknown): number | null {
  return typeof v === "number" && Number.isFinite(v) ? v : null;
}

function readHeader(headers: unknown, name: string): string | null {
  if (!headers) return null;
  // fetch's Headers answers null for a missing header; axios' AxiosHeaders answers undefined.
  if (typeof (headers as Headers).get === "function") {
    const v: unknown = (headers as Headers).get(name);
    return typeof v === "string" ? v : null;
  }
  const rec = headers as Record<string, unknown>;
  const v = rec[name] ?? rec[name.toLowerCase()];
  return typeof v === "string" ? v : Array.isArray(v) ? String(v[0]) : null;
}

/** Retry-After is seconds or an HTTP date; retry-after-ms is milliseconds (OpenAI's extension). */
export function parseRetryAfter(value: string | null, isMs: boolean, now = Date.now()): number | null {
  if (value === null || value.trim() === "") return null;
  const n = Number(value);
  if (Number.isFinite(n)) return n >= 0 ? (isMs ? n : n * 1000) : null;
  // Only a non-numeric value may be an HTTP-date: Date.parse("-3") would read a year.
  if (isMs) return null;
  const t = Date.parse(value);
  return Number.isFinite(t) ? Math.max(0, t - now) : null;
}

/** A child signal: aborted by the parent or by the per-attempt timeout; listeners cleaned up. */
export function childSignal(parent: AbortSignal | undefined, timeoutMs: number): { signal: AbortSignal; done: () => void; timedOut: () => boolean } {
  const ctrl = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    ctrl.abort(new MedmmvError("LLM_TIMEOUT", `call timed out after ${timeoutMs} ms`));
  }, timeoutMs);
  const onAbort = () => ctrl.abort(parent?.reason);
  // Every parallel call of a case listens on the case's signal for the duration of one
  // attempt (and removes its listener after): dozens at once are expected, not a leak.
  if (parent) setMaxListeners(0, parent);
  if (parent?.aborted) ctrl.abort(parent.reason);
  else parent?.addEventListener("abort", onAbort, { once: true });
  return {
    signal: ctrl.signal,
    timedOut: () => timedOut,
    done: () => {
      clearTimeout(timer);
      parent?.removeEventListener("abort", onAbort);
    },
  };
}

export async function withRetry<T>(
  what: string,
  policy: RetryPolicy,
  parent: AbortSignal | undefined,
  fn: (a: AttemptInfo) => Promise<T>,
  onRetry?: (info: { attempt: number; delayMs: number; error: ClassifiedError }) => void,
  /** Wraps each attempt (e.g. a concurrency slot); the attempt's timeout starts inside it. */
  gate: <R>(run: () => Promise<R>) => Promise<R> = (run) => run(),
): Promise<T> {
  const random = policy.random ?? Math.random;
  for (let attempt = 1; ; attempt++) {
    if (parent?.aborted) throw new MedmmvError("ABORTED", `${what}: aborted`);
    let timedOut = false;
    try {
      return await gate(async () => {
        const child = childSignal(parent, policy.timeoutMs);
        try {
          return await fn({ attempt, signal: child.signal });
        } finally {
          timedOut = child.timedOut();
          child.done();
        }
      });
    } catch (err) {
      const fail = (code: ErrorCode, message: string, details: Record<string, unknown>) =>
        new MedmmvError(policy.failureCode ?? code, message, { cause: err, details, retryable: code !== "LLM_FATAL" });
      const c = classifyError(err, parent?.aborted ?? false);
      if (c.aborted) throw new MedmmvError("ABORTED", `${what}: aborted`, { cause: err });
      if (!c.retryable && !timedOut) {
        if (err instanceof MedmmvError) throw err;
        // The provider's own words stay on the cause (and in the server log, via the pipeline's
        // callbacks): they can quote the request, and this message reaches the case's owner.
        throw fail("LLM_FATAL", `${what}: the provider refused the request (HTTP ${c.status ?? "?"}); the operator can find why in the server log`, { status: c.status });
      }
      const finalCode = timedOut ? "LLM_TIMEOUT" : "LLM_RETRYABLE";
      const describe = timedOut ? `timed out after ${policy.timeoutMs} ms` : c.status ? `HTTP ${c.status}` : "connection error";
      if (c.retryAfterMs !== null && c.retryAfterMs > policy.maxRetryAfterMs)
        throw fail("LLM_RETRYABLE", `${what}: provider asked to retry after ${Math.round(c.retryAfterMs / 1000)} s, beyond the ${Math.round(policy.maxRetryAfterMs / 1000)} s budget`, { retryAfterMs: c.retryAfterMs });
      if (attempt >= policy.maxAttempts)
        throw fail(finalCode, `${what}: failed after ${attempt} attempt(s); last: ${describe}; try again later`, { attempts: attempt, status: c.status });
      const backoff = policy.baseDelayMs * 2 ** (attempt - 1);
      const jittered = Math.round(random() * backoff);
      // Retry-After is a floor, not a suggestion: never come back earlier than asked.
      const delayMs = c.retryAfterMs !== null ? Math.max(c.retryAfterMs, jittered) : jittered;
      onRetry?.({ attempt, delayMs, error: c });
      try {
        await sleep(delayMs, undefined, { signal: parent });
      } catch {
        throw new MedmmvError("ABORTED", `${what}: aborted`);
      }
    }
  }
}
