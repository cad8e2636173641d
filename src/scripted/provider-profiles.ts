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
 *   supports a single image per message").
 */
export const PROVIDER_PROFILES = ["openai", "openai-reasoning", "azure", "anthropic-compat", "vllm", "ollama"] as const;
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
}

/** What a profile's rules make of one request before it is answered. */
export interface RuleVerdict {
  /** The rules this request breaks (each named once; counted when a reply already revealed it). */
  breaks: string[];
  /** A refusal to send instead of a completion; `reveals` is the rule it makes known. */
  refusal: { status: number; body: unknown; reveals: string } | null;
  /** The request's structured-output mode is ignored: answer in prose (and this reveals `reveals`). */
  prose: { reveals: string } | null;
}

export interface RequestFacts {
  body: Record<string, unknown>;
  text: string;
  /** Images per message, in order. */
  imagesPerMessage: number[];
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
  return out;
}

/** A reply in prose, as a model that was not held to a JSON format answers: no JSON object in it. */
export const PROSE_REPLY = "Having reviewed the case, the findings point most strongly to the second option; the history and the examination support it, and I would confirm it with the tests named in the notes.";
