import { causes } from "../contracts/errors.js";
import { isRecord } from "../contracts/is-record.js";

/**
 * What a provider's refusal of a request says, read from its error body as each provider
 * documents it: OpenAI's `param` and `code` (unsupported_value / unsupported_parameter),
 * Azure's content filter (`innererror.content_filter_result`), vLLM's image limit
 * (`At most N image(s) may be provided in one request.`), Ollama's (`only supports a single
 * image`), and the context-length refusals of OpenAI and vLLM. Null: nothing we can act on.
 */
export type Rejection =
  | { kind: "parameter"; parameter: string; message: string }
  | { kind: "structuredOutput"; parameter: "response_format" | "tools"; message: string }
  | { kind: "imageLimit"; limit: number; message: string }
  | { kind: "contentFilter"; categories: FilterCategory[]; message: string }
  | { kind: "contextLength"; window: number | null; requested: number | null; message: string };

export interface FilterCategory {
  category: string;
  severity: string | null;
}

/** The error object of a body: OpenAI's `{ error: {...} }`, or vLLM's flat `{ object: "error", message }`. */
function errorObject(body: unknown): Record<string, unknown> | null {
  if (!isRecord(body)) return null;
  if (isRecord(body.error)) return body.error;
  if (typeof body.message === "string") return body;
  return null;
}

/** Azure's per-category verdicts: the categories it filtered, with their severities. */
export function filteredCategories(results: unknown): FilterCategory[] {
  if (!isRecord(results)) return [];
  const out: FilterCategory[] = [];
  for (const [category, v] of Object.entries(results)) {
    if (!isRecord(v) || v.filtered !== true) continue;
    out.push({ category, severity: typeof v.severity === "string" ? v.severity : typeof v.detected === "boolean" ? "detected" : null });
  }
  return out;
}

const IMAGE_LIMIT = [/at most (\d+) image\(s\) may be provided/i, /set image=(\d+).*limit-mm-per-prompt/i];

export function readRejection(status: number, body: unknown): Rejection | null {
  const e = errorObject(body);
  if (!e) return null;
  const message = typeof e.message === "string" ? e.message : "";
  const code = typeof e.code === "string" ? e.code : null;
  const param = typeof e.param === "string" ? e.param : null;
  const inner = isRecord(e.innererror) ? e.innererror : null;
  if (code === "content_filter" || inner?.code === "ResponsibleAIPolicyViolation") {
    return { kind: "contentFilter", categories: filteredCategories(inner?.content_filter_result), message };
  }
  for (const re of IMAGE_LIMIT) {
    const m = re.exec(message);
    if (m) return { kind: "imageLimit", limit: Math.max(1, Number(m[1])), message };
  }
  if (/only supports (a single|one) image/i.test(message)) return { kind: "imageLimit", limit: 1, message };
  if (code === "context_length_exceeded" || /maximum context length is \d+/i.test(message)) {
    const window = /maximum context length is (\d+)/i.exec(message);
    const requested = /(?:resulted in|requested) (\d+) tokens/i.exec(message);
    return { kind: "contextLength", window: window ? Number(window[1]) : null, requested: requested ? Number(requested[1]) : null, message };
  }
  if (status !== 400 && status !== 422) return null;
  // A structured-output mode the server does not take: OpenAI names it in `param`; others only in words.
  const named = param ?? /\b(response_format|tool_choice|tools)\b/.exec(message)?.[1] ?? null;
  if (named === "response_format" || named?.startsWith("response_format.")) return { kind: "structuredOutput", parameter: "response_format", message };
  if (named === "tools" || named === "tool_choice" || named?.startsWith("tools[")) return { kind: "structuredOutput", parameter: "tools", message };
  if (code === "unsupported_value" || code === "unsupported_parameter") {
    const p = param ?? /'([a-z_]+)'/.exec(message)?.[1];
    if (p) return { kind: "parameter", parameter: p, message };
  }
  return null;
}

/** The refusal of a failed call: from the reply the fetch saw, or the SDK's error (a chat model of the embedding program's). */
export function rejectionOf(err: unknown, seen?: { status: number; body: unknown }): Rejection | null {
  if (seen) return readRejection(seen.status, seen.body);
  for (const e of causes(err)) {
    const rec = e as { status?: unknown; error?: unknown };
    if (typeof rec.status === "number" && rec.error !== undefined) return readRejection(rec.status, { error: rec.error });
  }
  return null;
}
