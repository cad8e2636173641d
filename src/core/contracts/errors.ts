/**
 * One error type for the whole service. `code` is a closed union so the HTTP error
 * handler, the CLI and the eval runner can map failures without string matching.
 */
export type ErrorCode =
  | "CONFIG_MISSING" // required configuration absent (endpoint, key…)
  | "MODEL_NOT_CONFIGURED" // no model endpoint/name: an operator's fix, not an outage
  | "CONFIG_INVALID"
  | "INVALID_INPUT" // client sent something we cannot accept
  | "UNSUPPORTED_MEDIA" // image bytes are not an accepted format
  | "PAYLOAD_TOO_LARGE"
  | "NOT_FOUND"
  | "CONFLICT"
  | "UNPROCESSABLE"
  | "UNAUTHORIZED"
  | "FORBIDDEN" // authenticated, but not allowed what it asked (e.g. a FHIR fetch without the EHR's token)
  | "PRECONDITION_FAILED" // CDS Hooks 412: required data neither sent nor obtainable
  | "RATE_LIMITED"
  | "LLM_RETRYABLE" // 429/5xx/timeout that exhausted the retry budget
  | "LLM_FATAL" // 4xx from the provider other than 429
  | "LLM_TIMEOUT"
  | "LLM_BAD_OUTPUT" // structured output still invalid after the re-asks
  | "CONTENT_FILTERED" // the provider's content filter refused the prompt or the reply (not retried)
  | "MODEL_REFUSED" // the model declined to answer (message.refusal)
  | "MODEL_PARAMETER_UNSUPPORTED" // the model refuses a parameter we cannot do without
  | "CONTEXT_TOO_LONG" // the prompt does not fit the model's context window
  | "CONTEXT_TRUNCATED" // the server answered 200 but cut the prompt to its window (Ollama): the model did not see the whole case
  | "MODEL_NO_IMAGES" // the model takes no images (a text-only model, llama.cpp without --mmproj); not retried
  | "QUOTA_EXCEEDED" // the account's credit, quota or spend limit is exhausted (a billing stop, not a rate limit); not retried
  | "OUTPUT_TRUNCATED" // the reply hit its output limit, also after a re-ask with a larger budget
  | "SEARCH_FAILED"
  | "ABORTED"
  | "PIPELINE_FAILED" // nothing left to answer with
  | "STORE_FAILED"
  | "RUN_CRASHED" // the case's run started too often without finishing (it kept taking its process down): quarantined
  | "INTERNAL";

export class MedmmvError extends Error {
  override readonly name = "MedmmvError";
  readonly code: ErrorCode;
  /** Safe, client-facing details (never patient data or model text). */
  readonly details?: Record<string, unknown>;
  readonly retryable: boolean;

  constructor(
    code: ErrorCode,
    message: string,
    opts: { cause?: unknown; details?: Record<string, unknown>; retryable?: boolean } = {},
  ) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.code = code;
    this.details = opts.details;
    this.retryable = opts.retryable ?? (code === "LLM_RETRYABLE" || code === "LLM_TIMEOUT");
  }
}

export function isMedmmvError(e: unknown): e is MedmmvError {
  return e instanceof MedmmvError;
}

/** A short, log-safe description of any thrown value (no stack, no payloads). */
export function describeError(e: unknown): { code: ErrorCode; message: string } {
  if (isMedmmvError(e)) return { code: e.code, message: e.message };
  if (e instanceof Error && e.name === "AbortError") return { code: "ABORTED", message: "aborted" };
  return { code: "INTERNAL", message: e instanceof Error ? e.message.slice(0, 300) : String(e).slice(0, 300) };
}

/**
 * Each object down an error's `.cause` chain, the error itself first; at most `max` of
 * them, so a cyclic or absurdly deep chain ends.
 */
export function* causes(err: unknown, max = 8): Generator<object> {
  let e: unknown = err;
  for (let depth = 0; depth < max && e && typeof e === "object"; depth++) {
    yield e;
    e = (e as { cause?: unknown }).cause;
  }
}
