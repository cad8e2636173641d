import { causes } from "../contracts/errors.js";
import { isRecord } from "../contracts/is-record.js";

/**
 * What a provider's refusal of a request says, read from its error body as each provider
 * documents it (the sources are named beside each rule below, and the scripted server plays
 * them: src/scripted/provider-profiles.ts). The body may be a JSON object (OpenAI's
 * `{ error: {...} }`, vLLM's flat `{ object: "error", message }`, TGI's `{ error: "…" }`), a
 * JSON array of them (Gemini's OpenAI-compatible endpoint) or plain text (TGI's 422 from its
 * JSON extractor). Null: nothing we can act on.
 */
export type Rejection =
  | { kind: "parameter"; parameter: string; message: string }
  | { kind: "structuredOutput"; parameter: "response_format" | "tools"; message: string }
  | { kind: "imageLimit"; limit: number; message: string }
  | { kind: "noImages"; message: string }
  | { kind: "contentFilter"; categories: FilterCategory[]; message: string; provider?: string }
  | { kind: "quota"; code: string; message: string; period?: "day" }
  | { kind: "contextLength"; window: number | null; requested: number | null; message: string };

export interface FilterCategory {
  category: string;
  severity: string | null;
}

/**
 * The error object of a body: OpenAI's `{ error: {...} }`, vLLM's flat `{ object: "error",
 * message }`, TGI's `{ error: "…", error_type }`, the first of Gemini's array `[{ error }]`,
 * or a plain-text body read as `{ message }`.
 */
function errorObject(body: unknown): Record<string, unknown> | null {
  if (typeof body === "string") return body.trim() ? { message: body.trim() } : null;
  if (Array.isArray(body)) return body.length ? errorObject(body[0]) : null;
  if (!isRecord(body)) return null;
  if (isRecord(body.error)) return body.error;
  if (typeof body.error === "string") return { ...body, message: body.error };
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

/**
 * A model that takes no images at all. DeepSeek's chat API: 400 "Failed to deserialize the JSON
 * body into the target type: messages[1]: unknown variant `image_url`, expected `text`"
 * (jxxghp/MoviePilot#5863, rikkahub/rikkahub#1433); llama.cpp's server without --mmproj: 500
 * "image input is not supported - hint: if this is unexpected, you may need to provide the
 * mmproj" (ggml-org/llama.cpp#15377, #13566); an older llama.cpp: `Unsupported content part
 * type: "image_url"` (#12947).
 */
const NO_IMAGES = [/unknown variant `?image_url`?, expected `?text`?/i, /image input is not supported/i, /unsupported content part type:?\s*\\?"?image_url/i, /does not support (image|vision) input/i];

/**
 * A billing stop, never a rate limit: OpenAI's 429 with type or code `insufficient_quota`, and
 * `credit_balance_exhausted`, `*_spend_limit_exceeded`, `organization_usage_limit_exceeded`
 * ("retrying will not restore access": learn.microsoft.com, dev-proxy, openai-insufficient-quota);
 * OpenRouter's 402 "insufficient credits" (openrouter.ai/docs/api/reference/errors-and-debugging); Amazon
 * Bedrock's ServiceQuotaExceededException (the account's quota, raised in Service Quotas, not by waiting a second).
 */
const QUOTA_CODES = new Set(["ServiceQuotaExceededException", "insufficient_quota", "credit_balance_exhausted", "organization_spend_limit_exceeded", "project_spend_limit_exceeded", "organization_usage_limit_exceeded", "billing_hard_limit_reached"]);

/**
 * A per-day quota used up: Google's 429 RESOURCE_EXHAUSTED whose `google.rpc.QuotaFailure`
 * detail names a daily quota in a violation's `quotaId` or `quotaMetric`
 * (`GenerateRequestsPerDayPerProjectPerModel-FreeTier`, `generate_requests_per_model_per_day`:
 * google-gemini/gemini-cli#8437, langgenius/dify#19838), the body an object (the Gemini API) or
 * an array of them (its OpenAI-compatible endpoint). Retrying is pointless until the quota
 * resets ("Requests per day (RPD) quotas reset at midnight Pacific time",
 * ai.google.dev/gemini-api/docs/rate-limits), whatever the `RetryInfo` beside it says (a real
 * per-day body carries `retryDelay: "22s"`). A per-minute violation alone stays a rate limit,
 * waited out by its retryDelay (rate-limit-hints.ts). The quotaId it names, or null.
 */
function dailyQuotaViolation(e: Record<string, unknown>): string | null {
  if (!Array.isArray(e.details)) return null;
  for (const d of e.details) {
    if (!isRecord(d) || typeof d["@type"] !== "string" || !d["@type"].endsWith("google.rpc.QuotaFailure") || !Array.isArray(d.violations)) continue;
    for (const v of d.violations) {
      if (!isRecord(v)) continue;
      const id = typeof v.quotaId === "string" ? v.quotaId : "";
      const metric = typeof v.quotaMetric === "string" ? v.quotaMetric : "";
      if (/per_?day/i.test(id) || /per_?day/i.test(metric)) return id || metric;
    }
  }
  return null;
}

/**
 * Context-window refusals, with the window and the prompt's tokens where the wording states
 * them: OpenAI's and vLLM's ("maximum context length is N tokens … resulted in M tokens");
 * llama.cpp's `exceed_context_size_error` with `n_ctx` and `n_prompt_tokens` (ggml-org/llama.cpp#15780);
 * TGI's 422 "`inputs` tokens + `max_new_tokens` must be <= N. Given: M `inputs` tokens"
 * (huggingface/tgi-gaudi#146, huggingface/llm-vscode#94); Anthropic's "prompt is too long: M tokens > N
 * maximum"; Gemini's "The input token count (M)
 * exceeds the maximum number of tokens allowed (N)" (google-gemini/gemini-cli#13006); Ollama's
 * native API with truncation off: "the input length exceeds the context length".
 */
function contextRefusal(e: Record<string, unknown>, message: string, code: string | null): Rejection | null {
  const num = (re: RegExp) => {
    const m = re.exec(message);
    return m ? Number(m[1]) : null;
  };
  if (e.type === "exceed_context_size_error" || /exceeds the available context size/i.test(message)) {
    return { kind: "contextLength", window: typeof e.n_ctx === "number" ? e.n_ctx : null, requested: typeof e.n_prompt_tokens === "number" ? e.n_prompt_tokens : null, message };
  }
  if (/`?inputs`? tokens \+ `?max_new_tokens`? must be <= \d+/i.test(message))
    return { kind: "contextLength", window: num(/must be <= (\d+)/i), requested: num(/Given: (\d+) `?inputs`? tokens/i), message };
  // Amazon Bedrock's ValidationException "Input is too long for requested model." (or "The model returned the
  // following errors: Input is too long…"), which states neither size (aws-samples/assessment-generator#2, continuedev/continue#6005).
  if (/input is too long for requested model/i.test(message)) return { kind: "contextLength", window: null, requested: null, message };
  // Anthropic's 400 invalid_request_error "prompt is too long: 208310 tokens > 200000 maximum" (anthropics/claude-code#12186, #14195).
  if (/prompt is too long: \d+ tokens > \d+ maximum/i.test(message))
    return { kind: "contextLength", window: num(/> (\d+) maximum/i), requested: num(/too long: (\d+) tokens/i), message };
  if (/input token count \(\d+\) exceeds the maximum number of tokens allowed/i.test(message))
    return { kind: "contextLength", window: num(/tokens allowed \((\d+)\)/i), requested: num(/input token count \((\d+)\)/i), message };
  if (code === "context_length_exceeded" || /maximum context length is \d+/i.test(message) || /exceeds the (maximum )?context length/i.test(message))
    return { kind: "contextLength", window: num(/maximum context length is (\d+)/i), requested: num(/(?:resulted in|requested) (\d+) tokens/i), message };
  return null;
}

/**
 * A moderation refusal outside Azure's filter: OpenRouter's 403 "Your chosen model requires
 * moderation and your input was flagged", with `metadata.reasons`, `flagged_input`,
 * `provider_name` (openrouter.ai/docs/api/reference/errors-and-debugging), and any body that
 * says it was flagged (`flagged: true`, a `moderation` object or code).
 */
function moderationRefusal(status: number, e: Record<string, unknown>, message: string, code: string | null): Rejection | null {
  const meta = isRecord(e.metadata) ? e.metadata : null;
  const flagged =
    meta?.flagged_input !== undefined || e.flagged === true || isRecord(e.moderation) || code === "moderation" || code === "content_policy_violation" || (status === 403 && /moderation|flagged/i.test(message));
  if (!flagged) return null;
  const reasons = Array.isArray(meta?.reasons) ? meta.reasons.filter((r): r is string => typeof r === "string") : [];
  const by = typeof meta?.provider_name === "string" ? meta.provider_name : null;
  return { kind: "contentFilter", categories: reasons.map((category) => ({ category, severity: null })), message, provider: by ? `the moderation of ${by}` : "the provider's moderation" };
}

/**
 * Gemini's safety filters (Vertex AI and the Gemini API): a 200 whose reply was blocked. A
 * blocked prompt has `promptFeedback.blockReason` (SAFETY, BLOCKLIST, PROHIBITED_CONTENT,
 * MODEL_ARMOR, JAILBREAK, OTHER) and no candidates; a blocked answer a candidate without
 * content whose `finishReason` says why (SAFETY, BLOCKLIST, PROHIBITED_CONTENT, SPII,
 * RECITATION). The categories are the `safetyRatings` marked `blocked: true`
 * (cloud.google.com/vertex-ai/generative-ai/docs/multimodal/process-blocked-responses;
 * the Vertex AI v1 API's GenerateContentResponse.PromptFeedback.BlockedReason).
 */
const GEMINI_BLOCKED_FINISH = new Set(["SAFETY", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "RECITATION", "IMAGE_SAFETY"]);

function geminiBlock(body: unknown): Rejection | null {
  if (!isRecord(body)) return null;
  const feedback = isRecord(body.promptFeedback) ? body.promptFeedback : null;
  const candidate = Array.isArray(body.candidates) && isRecord(body.candidates[0]) ? body.candidates[0] : null;
  const reason = typeof feedback?.blockReason === "string" ? feedback.blockReason : typeof candidate?.finishReason === "string" && GEMINI_BLOCKED_FINISH.has(candidate.finishReason) ? candidate.finishReason : null;
  if (!reason) return null;
  const ratings = [...(Array.isArray(feedback?.safetyRatings) ? feedback.safetyRatings : []), ...(Array.isArray(candidate?.safetyRatings) ? candidate.safetyRatings : [])].filter(isRecord);
  const blocked = ratings.filter((r) => r.blocked === true && typeof r.category === "string");
  const categories = blocked.length
    ? blocked.map((r) => ({ category: String(r.category), severity: typeof r.severity === "string" ? r.severity : typeof r.probability === "string" ? r.probability : null }))
    : [{ category: reason, severity: null }];
  return { kind: "contentFilter", categories, message: typeof feedback?.blockReasonMessage === "string" ? feedback.blockReasonMessage : `blocked: ${reason}`, provider: "Google's safety filters" };
}

export function readRejection(status: number, body: unknown): Rejection | null {
  const blocked = status < 300 ? (geminiBlock(body) ?? (isRecord(body) ? geminiBlock(body.error) : null)) : null;
  if (blocked) return blocked;
  const e = errorObject(body);
  if (!e) return null;
  const message = typeof e.message === "string" ? e.message : "";
  const code = typeof e.code === "string" ? e.code : null;
  const type = typeof e.type === "string" ? e.type : null;
  const param = typeof e.param === "string" ? e.param : null;
  const inner = isRecord(e.innererror) ? e.innererror : null;
  if (code === "content_filter" || inner?.code === "ResponsibleAIPolicyViolation") {
    return { kind: "contentFilter", categories: filteredCategories(inner?.content_filter_result), message };
  }
  const moderation = moderationRefusal(status, e, message, code);
  if (moderation) return moderation;
  const quota = [code, type].find((c): c is string => c !== null && QUOTA_CODES.has(c));
  if (quota) return { kind: "quota", code: quota, message };
  const daily = status === 429 || e.status === "RESOURCE_EXHAUSTED" ? dailyQuotaViolation(e) : null;
  if (daily) return { kind: "quota", code: daily, message, period: "day" };
  // A project with no quota at all for the model: Google's 429 RESOURCE_EXHAUSTED "Quota exceeded for metric: …, limit: 0,
  // model: …" (google-gemini/gemini-cli#22486) or "… doesn't have a free quota tier" (ai-christianson/RA.Aid#182). Waiting
  // does not help whatever its retryDelay says: the quota is zero until the project's tier changes.
  if ((status === 429 || e.status === "RESOURCE_EXHAUSTED") && (/quota exceeded for metric:[^\n]*\blimit: 0\b/i.test(message) || /doesn't have a free quota tier/i.test(message)))
    return { kind: "quota", code: "no_quota_for_model", message };
  if (status === 402) return { kind: "quota", code: "payment_required", message };
  for (const re of IMAGE_LIMIT) {
    const m = re.exec(message);
    if (m) return { kind: "imageLimit", limit: Math.max(1, Number(m[1])), message };
  }
  if (/only supports (a single|one) image/i.test(message)) return { kind: "imageLimit", limit: 1, message };
  if (NO_IMAGES.some((re) => re.test(message))) return { kind: "noImages", message };
  const context = contextRefusal(e, message, code);
  if (context) return context;
  if (status !== 400 && status !== 422) return null;
  // A structured-output mode the server does not take: OpenAI names it in `param`; others only in
  // words (TGI's plain-text 422 "Failed to deserialize the JSON body into the target type:
  // response_format: …", huggingface/text-generation-inference#2899).
  // DeepSeek's reasoner: 400 "deepseek-reasoner does not support Function Calling" (spring-projects/spring-ai#2643).
  const named = param ?? /\b(response_format|tool_choice|tools)\b/.exec(message)?.[1] ?? (/does not support function calling/i.test(message) ? "tools" : null);
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
    const rec = e as { status?: unknown; error?: unknown; name?: unknown; message?: unknown; $metadata?: { httpStatusCode?: unknown } };
    if (typeof rec.status === "number" && rec.error !== undefined) return readRejection(rec.status, Array.isArray(rec.error) || typeof rec.error === "string" ? rec.error : { error: rec.error });
    // An AWS SDK service exception (Bedrock through ChatBedrockConverse): its name is the error code, e.g.
    // { name: "ValidationException", $metadata: { httpStatusCode: 400 }, message: "Input is too long for requested model." }.
    const awsStatus = rec.$metadata?.httpStatusCode;
    if (typeof awsStatus === "number" && typeof rec.name === "string") return readRejection(awsStatus, { error: { code: rec.name, message: typeof rec.message === "string" ? rec.message : "" } });
    // Gemini's own SDK (@google/generative-ai, under @langchain/google-genai): GoogleGenerativeAIFetchError
    // keeps the status and the body's `error.details`, not the body.
    const google = e as { status?: unknown; errorDetails?: unknown; message?: unknown };
    if (typeof google.status === "number" && Array.isArray(google.errorDetails))
      return readRejection(google.status, { error: { code: google.status, message: typeof google.message === "string" ? google.message : "", details: google.errorDetails } });
  }
  return null;
}
