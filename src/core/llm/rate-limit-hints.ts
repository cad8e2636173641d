import { isRecord } from "../contracts/is-record.js";

/**
 * How long a refusing server asks to be left alone, where it says so other than in
 * Retry-After (which retry.ts reads itself):
 * - `x-ratelimit-reset-requests` / `x-ratelimit-reset-tokens`: OpenAI's and Groq's time until the
 *   window resets, as a Go duration ("1s", "6m0s", "20ms"; Groq's rate-limit headers, and
 *   docs.rs opendev-http RateLimitInfo: "e.g. 1s, 6m0s"). On a 429 the later of the two is the
 *   wait: coming back earlier meets the same refusal.
 * - Gemini's `google.rpc.RetryInfo` detail: `{ "@type": "type.googleapis.com/google.rpc.RetryInfo",
 *   "retryDelay": "38s" }` in `error.details`, the body an object or (its OpenAI-compatible
 *   endpoint) an array of them.
 * Null: no stated wait (or not a 429/503).
 */
export function statedWaitMs(status: number, headers: Headers, body: unknown): number | null {
  if (status !== 429 && status !== 503) return null;
  const fromBody = retryInfoDelayMs(body);
  if (fromBody !== null) return fromBody;
  const resets = ["x-ratelimit-reset-requests", "x-ratelimit-reset-tokens"].map((h) => parseGoDuration(headers.get(h))).filter((ms): ms is number => ms !== null);
  return status === 429 && resets.length ? Math.max(...resets) : null;
}

const UNIT_MS: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1, us: 0.001, "µs": 0.001, ns: 0.000001 };

/** A Go duration ("6m0s", "1.5s", "20ms", "2h3m"), or a bare number of seconds, in ms; null when it is neither. */
export function parseGoDuration(value: string | null | undefined): number | null {
  if (value === null || value === undefined) return null;
  const v = value.trim();
  if (v === "") return null;
  if (/^\d+(\.\d+)?$/.test(v)) return Math.round(Number(v) * 1000);
  const re = /(\d+(?:\.\d+)?)(ms|us|µs|ns|h|m|s)/gy;
  let total = 0;
  let matched = 0;
  for (let m = re.exec(v); m; m = re.exec(v)) {
    total += Number(m[1]) * UNIT_MS[m[2]!]!;
    matched = re.lastIndex;
  }
  return matched === v.length ? Math.round(total) : null;
}

/** Gemini's google.rpc.RetryInfo delay in an error body (an object or an array of them), in ms; null when none is stated. */
export function retryInfoDelayMs(body: unknown): number | null {
  const first = Array.isArray(body) ? body[0] : body;
  const error = isRecord(first) && isRecord(first.error) ? first.error : null;
  if (!error || !Array.isArray(error.details)) return null;
  for (const d of error.details) {
    if (isRecord(d) && typeof d["@type"] === "string" && d["@type"].endsWith("google.rpc.RetryInfo") && typeof d.retryDelay === "string") return parseGoDuration(d.retryDelay);
  }
  return null;
}
