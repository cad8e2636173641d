import { isRecord } from "../core/contracts/is-record.js";

/**
 * The scripted OpenAI-compatible server playing a real provider: each profile applies the
 * rules that provider documents for its chat-completions endpoint, so the product meets
 * them in tests exactly as it would in production.
 *
 * - `openai`: no extra rules (the server's historical behaviour).
 * - `openai-reasoning`: OpenAI's reasoning models (GPT-5, gpt-5-mini, o3, o4-mini). A
 *   temperature or top_p other than 1 is refused (400, `code: "unsupported_value"`, `param`),
 *   `max_tokens` is refused in favour of `max_completion_tokens` (400,
 *   `code: "unsupported_parameter"`), and usage states `completion_tokens_details.reasoning_tokens`.
 * - `azure`: Azure OpenAI's content filter. A prompt it flags is refused with 400,
 *   `code: "content_filter"` and `innererror: { code: "ResponsibleAIPolicyViolation",
 *   content_filter_result }`; a reply it flags comes back 200 with `finish_reason:
 *   "content_filter"` and no content.
 * - `anthropic-compat`: Anthropic's OpenAI SDK compatibility layer, whose documentation lists
 *   `response_format` as ignored: such a request is answered in prose. Tools work.
 * - `vllm`: vLLM serving a vision model with `--limit-mm-per-prompt image=N` (1 by default
 *   for many models): more images are refused with 400 and the flat error body
 *   `{ object: "error", message: "At most N image(s) may be provided in one request.", … }`.
 * - `ollama`: Ollama's vision models take one image per message ("vision model only
 *   supports a single image per message"). Its context window is 4k tokens by default below
 *   24 GiB of VRAM (docs.ollama.com context-length: "< 24 GiB VRAM: 4k context"), which its
 *   OpenAI-compatible API cannot raise (it ignores options.num_ctx there: NousResearch/hermes-agent#43900);
 *   a longer prompt is cut — its runner keeps the head and the tail — and answered 200
 *   ("truncating input prompt", orgs/infiniflow discussion #10500). The usage then states the
 *   tokens kept: about half the window (the case of issue 58: ~4,144 tokens cut to ~2,050 at 4k).
 *   `contextWindow` plays OLLAMA_CONTEXT_LENGTH.
 * - `llamacpp`: llama.cpp's llama-server. A prompt over its `-c` window (`contextWindow`,
 *   default 4096) is refused with `{ error: { code: 400, type: "exceed_context_size_error",
 *   n_prompt_tokens, n_ctx } }` (ggml-org/llama.cpp#15780, oobabooga/textgen#7257); started
 *   without `--mmproj` (`mmproj: false`, the default) it answers any image 500 "image input is
 *   not supported - hint: if this is unexpected, you may need to provide the mmproj" (ggml-org/llama.cpp#15377).
 * - `tgi`: Hugging Face's text-generation-inference. Its response_format takes `json` and
 *   `regex` only: a `json_schema` or `json_object` request is refused by its JSON extractor with
 *   422 and a plain-text body ("Failed to deserialize the JSON body into the target type:
 *   response_format: …", huggingface/text-generation-inference#2899); tools work. A prompt over
 *   `contextWindow` (max-total-tokens) is refused 422 `{ error: "Input validation error: `inputs`
 *   tokens + `max_new_tokens` must be <= N. Given: M `inputs` tokens and K `max_new_tokens`",
 *   error_type: "validation" }` (huggingface/tgi-gaudi#146).
 * - `deepseek`: DeepSeek's API takes text only: an image part is refused 400 "Failed to
 *   deserialize the JSON body into the target type: messages[1]: unknown variant `image_url`,
 *   expected `text`" (jxxghp/MoviePilot#5863); response_format takes `text` and `json_object`
 *   only ("This response_format type is unavailable now" for json_schema); the reasoner
 *   (a model named *reasoner*) refuses tools: 400 "deepseek-reasoner does not support Function
 *   Calling" (spring-projects/spring-ai#2643).
 * - `groq`: every reply carries `x-ratelimit-*` headers; `throttle: n` refuses the first n
 *   requests 429 with `x-ratelimit-reset-requests` / `-reset-tokens` as Go durations ("6m0s")
 *   and no Retry-After (dev.to "Groq 429s: read the headers"; docs.rs opendev-http RateLimitInfo).
 * - `openrouter`: `usage.cost` on every reply (openrouter.ai/docs/use-cases/usage-accounting);
 *   a prompt its moderation flags (`promptFilter`) refused 403 with `metadata.reasons`,
 *   `flagged_input`, `provider_name`; `throttle: n` answers the first n requests 200 with an
 *   error in the body (`{ error: { code: 502, message } }`: "any error occurred while the LLM is
 *   producing the output will be emitted in the response body", openrouter.ai/docs/api/reference/errors-and-debugging);
 *   `quota: true` answers 402 (insufficient credits).
 * - `gemini-openai`: Gemini's OpenAI-compatible endpoint: errors are JSON arrays
 *   `[{ error: { code, message, status } }]` (google-gemini/gemini-cli#6454, #13006); a prompt
 *   over `contextWindow` is refused 400 "The input token count (M) exceeds the maximum number
 *   of tokens allowed (N)."; `throttle: n` refuses the first n requests 429 RESOURCE_EXHAUSTED
 *   with a google.rpc.RetryInfo `retryDelay`; `dailyQuota: true` refuses every request 429
 *   RESOURCE_EXHAUSTED for a per-day quota, as Google sends it: a QuotaFailure violation with
 *   `quotaId: "GenerateRequestsPerDayPerProjectPerModel-FreeTier"` and `quotaValue`, a Help link,
 *   and a RetryInfo of seconds all the same (a real body: oppl.ai gemini_complex_1; gemini-cli#8437;
 *   "RPD quotas reset at midnight Pacific time", ai.google.dev/gemini-api/docs/rate-limits). The
 *   native generateContent route answers the same refusals as one object (scripted-gemini-routes.ts).
 * - `openai-quota`: OpenAI with no credit left: 429 `{ error: { type: "insufficient_quota",
 *   code: "insufficient_quota" } }` (mattvr/ShellGPT#23), which no retry cures.
 */
export const PROVIDER_PROFILES = ["openai", "openai-reasoning", "azure", "anthropic-compat", "vllm", "ollama", "llamacpp", "tgi", "deepseek", "groq", "openrouter", "gemini-openai", "openai-quota"] as const;
export type ProviderProfile = (typeof PROVIDER_PROFILES)[number];

export interface ProviderOptions {
  /** vllm: images one request may carry (--limit-mm-per-prompt); default 1. */
  imageLimit?: number;
  /** azure: prompts its filter flags (default: an overdose, suicide or self-harm). */
  promptFilter?: RegExp;
  /** azure: replies its filter flags (default: none). */
  completionFilter?: RegExp;
  /** openai-reasoning: reasoning tokens stated per reply (default 64). */
  reasoningTokens?: number;
  /** ollama, llamacpp, tgi, gemini-openai: the server's context window in tokens (ollama and llamacpp: 4096 by default; the others: none). */
  contextWindow?: number;
  /** llamacpp: started with the model's --mmproj (images work); default false. */
  mmproj?: boolean;
  /** groq, openrouter, gemini-openai: so many first requests meet the provider's rate limit (its own shape). */
  throttle?: number;
  /** groq: the Go durations of its reset headers on a 429 (default "20ms" for tokens, "10ms" for requests). */
  resetTokens?: string;
  resetRequests?: string;
  /** gemini-openai: the RetryInfo delay of its 429 (default "0.02s"). */
  retryDelay?: string;
  /** gemini-openai: every request meets the project's used-up per-day quota (429, QuotaFailure PerDay). */
  dailyQuota?: boolean;
  /** openrouter: every request is refused for credit (402). */
  quota?: boolean;
  /** Any profile: replies carry no usage block (some gateways and local servers leave it out). */
  omitsUsage?: boolean;
}

/** What a profile's rules make of one request before it is answered. */
export interface RuleVerdict {
  /** The rules this request breaks (each named once; counted when a reply already revealed it). */
  breaks: string[];
  /** A refusal to send instead of a completion (a string body goes as plain text); `reveals` is the rule it makes known. */
  refusal: { status: number; body: unknown; reveals: string; headers?: Record<string, string> } | null;
  /** The request's structured-output mode is ignored: answer in prose (and this reveals `reveals`). */
  prose: { reveals: string } | null;
  /** The server cut the prompt to its window and answers anyway: usage states only the tokens kept (Ollama). */
  keptPromptTokens?: number;
  /** Headers every reply of this provider carries. */
  headers?: Record<string, string>;
  /** The provider states each call's cost in usage.cost (OpenRouter), at this many USD per token. */
  statesCostPerToken?: number;
}

export interface RequestFacts {
  body: Record<string, unknown>;
  text: string;
  /** Images per message, in order. */
  imagesPerMessage: number[];
  /** The prompt's tokens as the server counts them. */
  promptTokens: number;
  /** Requests this provider profile has refused for its rate limit so far (`throttle`). */
  throttled: number;
}

function openAIError(message: string, type: string, param: string | null, code: string | null): { error: Record<string, unknown> } {
  return { error: { message, type, param, code } };
}

/** Azure's verdicts on the four harm categories, with `flagged` filtered at medium severity. */
export function azureFilterResult(flagged: string | null): Record<string, unknown> {
  const verdict = (c: string) => (c === flagged ? { filtered: true, severity: "medium" } : { filtered: false, severity: "safe" });
  return { hate: verdict("hate"), jailbreak: { filtered: false, detected: false }, self_harm: verdict("self_harm"), sexual: verdict("sexual"), violence: verdict("violence") };
}

const SELF_HARM = /\b(overdose|suicid\w*|self-harm)\b/i;

export function judgeRequest(profile: ProviderProfile, opts: ProviderOptions, r: RequestFacts): RuleVerdict {
  const out: RuleVerdict = { breaks: [], refusal: null, prose: null };
  const b = r.body;
  if (profile === "openai-reasoning") {
    for (const param of ["temperature", "top_p"] as const) {
      const v = b[param];
      if (typeof v === "number" && v !== 1) {
        out.breaks.push(param);
        out.refusal ??= {
          status: 400,
          body: openAIError(`Unsupported value: '${param}' does not support ${v} with this model. Only the default (1) value is supported.`, "invalid_request_error", param, "unsupported_value"),
          reveals: param,
        };
      }
    }
    if (b.max_tokens !== undefined && b.max_tokens !== null) {
      out.breaks.push("max_tokens");
      out.refusal ??= {
        status: 400,
        body: openAIError("Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.", "invalid_request_error", "max_tokens", "unsupported_parameter"),
        reveals: "max_tokens",
      };
    }
  }
  if (profile === "azure" && (opts.promptFilter ?? SELF_HARM).test(r.text)) {
    out.refusal = {
      status: 400,
      body: {
        error: {
          message:
            "The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry. To learn more about our content filtering policies please read our documentation: https://go.microsoft.com/fwlink/?linkid=2198766",
          type: null,
          param: "prompt",
          code: "content_filter",
          status: 400,
          innererror: { code: "ResponsibleAIPolicyViolation", content_filter_result: azureFilterResult("self_harm") },
        },
      },
      reveals: "content_filter",
    };
  }
  if (profile === "anthropic-compat") {
    const rf = b.response_format;
    const tools = Array.isArray(b.tools) && b.tools.length > 0;
    if (rf !== undefined && rf !== null) {
      out.breaks.push("response_format");
      if (!tools) out.prose = { reveals: "response_format" };
    }
  }
  const images = r.imagesPerMessage.reduce((a, n) => a + n, 0);
  if (profile === "vllm") {
    const limit = opts.imageLimit ?? 1;
    if (images > limit) {
      out.breaks.push("images");
      out.refusal ??= { status: 400, body: { object: "error", message: `At most ${limit} image(s) may be provided in one request.`, type: "BadRequestError", param: null, code: 400 }, reveals: "images" };
    }
  }
  if (profile === "ollama" && r.imagesPerMessage.some((n) => n > 1)) {
    out.breaks.push("images");
    out.refusal ??= { status: 400, body: openAIError("vision model only supports a single image per message", "invalid_request_error", null, null), reveals: "images" };
  }
  const window = opts.contextWindow ?? (profile === "ollama" || profile === "llamacpp" ? 4096 : null);
  const overWindow = window !== null && r.promptTokens > window;
  if (profile === "ollama" && overWindow) {
    out.breaks.push("context");
    // Kept: about half the window (the head and the tail), answered 200 as if whole.
    out.keptPromptTokens = Math.floor(window / 2) + 2;
  }
  if (profile === "llamacpp") {
    if (images > 0 && opts.mmproj !== true) {
      out.breaks.push("images");
      out.refusal ??= { status: 500, body: { error: { code: 500, message: "image input is not supported - hint: if this is unexpected, you may need to provide the mmproj", type: "server_error" } }, reveals: "images" };
    }
    if (overWindow) {
      out.breaks.push("context");
      out.refusal ??= {
        status: 400,
        body: { error: { code: 400, message: "the request exceeds the available context size, try increasing it", type: "exceed_context_size_error", n_prompt_tokens: r.promptTokens, n_ctx: window } },
        reveals: "context",
      };
    }
  }
  const rf = isRecord(b.response_format) ? b.response_format.type : undefined;
  if (profile === "tgi") {
    if (rf === "json_schema" || rf === "json_object") {
      out.breaks.push("response_format");
      const why = rf === "json_object" ? "missing field `value`" : "unknown variant `json_schema`, expected `json` or `regex`";
      out.refusal ??= { status: 422, body: `Failed to deserialize the JSON body into the target type: response_format: ${why} at line 1 column ${JSON.stringify(b).length}`, reveals: "response_format" };
    }
    if (overWindow) {
      out.breaks.push("context");
      const maxNew = typeof b.max_tokens === "number" ? b.max_tokens : 1024;
      out.refusal ??= {
        status: 422,
        body: { error: `Input validation error: \`inputs\` tokens + \`max_new_tokens\` must be <= ${window}. Given: ${r.promptTokens} \`inputs\` tokens and ${maxNew} \`max_new_tokens\``, error_type: "validation" },
        reveals: "context",
      };
    }
  }
  if (profile === "deepseek") {
    if (images > 0) {
      out.breaks.push("images");
      const at = r.imagesPerMessage.findIndex((n) => n > 0);
      out.refusal ??= {
        status: 400,
        body: openAIError(`Failed to deserialize the JSON body into the target type: messages[${at}]: unknown variant \`image_url\`, expected \`text\` at line 1 column ${JSON.stringify(b).length}`, "invalid_request_error", null, "invalid_request_error"),
        reveals: "images",
      };
    }
    if (rf === "json_schema") {
      out.breaks.push("response_format");
      out.refusal ??= { status: 400, body: openAIError("This response_format type is unavailable now", "invalid_request_error", null, "invalid_request_error"), reveals: "response_format" };
    }
    const model = typeof b.model === "string" ? b.model : "";
    if (/reasoner/.test(model) && Array.isArray(b.tools) && b.tools.length > 0) {
      out.breaks.push("tools");
      out.refusal ??= { status: 400, body: openAIError("deepseek-reasoner does not support Function Calling", "invalid_request_error", null, "invalid_request_error"), reveals: "tools" };
    }
  }
  const throttled = r.throttled < (opts.throttle ?? 0);
  if (profile === "groq") {
    out.headers = { "x-ratelimit-limit-requests": "1000", "x-ratelimit-limit-tokens": "6000", "x-ratelimit-remaining-requests": "999", "x-ratelimit-remaining-tokens": "5000", "x-ratelimit-reset-requests": "1m26.4s", "x-ratelimit-reset-tokens": "1s" };
    if (throttled)
      out.refusal ??= {
        status: 429,
        body: openAIError("Rate limit reached for model in organization on tokens per minute (TPM): Limit 6000, Used 5800, Requested 900.", "tokens", null, "rate_limit_exceeded"),
        headers: { ...out.headers, "x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": opts.resetTokens ?? "20ms", "x-ratelimit-reset-requests": opts.resetRequests ?? "10ms" },
        reveals: "rate-limit",
      };
  }
  if (profile === "openrouter") {
    out.statesCostPerToken = 0.000002;
    if (opts.quota) out.refusal ??= { status: 402, body: { error: { code: 402, message: "Insufficient credits. Add more using https://openrouter.ai/settings/credits" } }, reveals: "quota" };
    if ((opts.promptFilter ?? SELF_HARM).test(r.text)) {
      out.breaks.push("moderation");
      out.refusal ??= {
        status: 403,
        body: { error: { code: 403, message: "Your chosen model requires moderation and your input was flagged", metadata: { reasons: ["self-harm"], flagged_input: r.text.slice(0, 100), provider_name: "OpenAI", model_slug: String(b.model ?? "") } } },
        reveals: "moderation",
      };
    }
    // An error met while the model was producing: 200, the error in the body, no choices.
    if (throttled) out.refusal ??= { status: 200, body: { error: { code: 502, message: "Provider returned error" } }, reveals: "upstream" };
  }
  if (profile === "gemini-openai") {
    if (overWindow) {
      out.breaks.push("context");
      const message = `The input token count (${r.promptTokens}) exceeds the maximum number of tokens allowed (${window}).`;
      out.refusal ??= { status: 400, body: [{ error: { code: 400, message, errors: [{ message, domain: "global", reason: "badRequest" }], status: "INVALID_ARGUMENT" } }], reveals: "context" };
    }
    if (opts.dailyQuota)
      out.refusal ??= {
        status: 429,
        body: [
          {
            error: {
              code: 429,
              message: "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.",
              status: "RESOURCE_EXHAUSTED",
              details: [
                {
                  "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                  violations: [
                    {
                      quotaMetric: "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                      quotaId: "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
                      quotaDimensions: { location: "global", model: String(b.model ?? "") },
                      quotaValue: "250",
                    },
                  ],
                },
                { "@type": "type.googleapis.com/google.rpc.Help", links: [{ description: "Learn more about Gemini API quotas", url: "https://ai.google.dev/gemini-api/docs/rate-limits" }] },
                { "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "22s" },
              ],
            },
          },
        ],
        reveals: "quota",
      };
    if (throttled)
      out.refusal ??= {
        status: 429,
        body: [
          {
            error: {
              code: 429,
              message: "You exceeded your current quota, please check your plan and billing details.",
              status: "RESOURCE_EXHAUSTED",
              details: [
                { "@type": "type.googleapis.com/google.rpc.QuotaFailure", violations: [{ quotaMetric: "generativelanguage.googleapis.com/generate_content_free_tier_requests", quotaId: "GenerateRequestsPerMinutePerProjectPerModel-FreeTier" }] },
                { "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: opts.retryDelay ?? "0.02s" },
              ],
            },
          },
        ],
        reveals: "rate-limit",
      };
  }
  if (profile === "openai-quota")
    out.refusal ??= {
      status: 429,
      body: openAIError("You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.", "insufficient_quota", null, "insufficient_quota"),
      reveals: "quota",
    };
  return out;
}

/** The provider rules that stateful options count (`throttle`): whether this refusal is one of them. */
export function isThrottle(reveals: string): boolean {
  return reveals === "rate-limit" || reveals === "upstream";
}

/** A reply in prose, as a model that was not held to a JSON format answers: no JSON object in it. */
export const PROSE_REPLY = "Having reviewed the case, the findings point most strongly to the second option; the history and the examination support it, and I would confirm it with the tests named in the notes.";
