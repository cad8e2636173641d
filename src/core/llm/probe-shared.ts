import type { ModelProvider } from "./model-spec.js";
import type { TokenParameter } from "./model-profile.js";
import { PROBE_MARK } from "./format-probe.js";

/**
 * What `medmmv models check` found about one configured model and its server (model-probe.ts
 * for the OpenAI chat-completions wire, integration-probe.ts for a provider's own integration).
 */
export interface ModelCheck {
  model: string;
  /** The provider the model's name resolves to (providers/registry.ts). */
  provider: ModelProvider;
  /** How it was probed: request by request on the chat-completions wire, or through its provider's LangChain integration. */
  via: "chat-completions" | "integration";
  /** null when the endpoint could not be used at all (see `problem`). */
  temperature: boolean | null;
  /** Each mode: works (true), does not (false), or null — not a mode this provider's integration can be asked for. */
  structuredOutput: { jsonSchema: boolean | null; functionCalling: boolean | null; jsonMode: boolean | null } | null;
  /** Images one request may carry: 0 (none), 1, or null for two or more with no limit seen. */
  imagesPerRequest: number | null;
  /**
   * The server's context window as the long probe found it: `tokens` is the window a refusal
   * stated, or the tokens a server kept of a prompt it cut (`truncates`: it answers anyway,
   * and a longer prompt is silently cut); null tokens: the probe fit (the window is at least
   * `probedTokens`), or the probe failed.
   */
  contextWindow: { tokens: number | null; truncates: boolean; probedTokens: number } | null;
  /** Whether a short reasoning call reported reasoning tokens; null: not asked (an integration's own). */
  reasoning: boolean | null;
  /** The output budget's name; null: not asked (an integration names it itself). */
  tokenParameter: TokenParameter | null;
  requests: number;
  /** Why the model could not be checked: `unreachable` (URL), `unauthorized` (key or credentials), `not-found` (URL or model name). */
  problem: { kind: "unreachable" | "unauthorized" | "not-found" | "failed"; message: string } | null;
  /** The settings to use with this model (environment variables). */
  settings: Record<string, string>;
}

/** A 1×1 PNG: the smallest picture a vision model will take. */
export const TINY_PNG = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg==";
/** The system message of every probe request: content-free, and marked as a health check. */
export const PROBE_SYSTEM = `You answer health-check requests. ${PROBE_MARK}`;
export const PROBE_ASK = 'Reply with the JSON object {"ok": true} and nothing else.';
/** Attempts per probe request when its failure is transient. */
export const PROBE_ATTEMPTS = 3;
/** The long probe's text: about 6,000 tokens, past a 4k window (Ollama's default, llama.cpp's -c 4096) and inside any larger one. */
export const LONG_PROBE = Array.from({ length: 260 }, (_, i) => `Line ${i + 1} of a long health-check text; it only measures how much of a prompt the server reads. `).join("");

/** The text of the image probe (`n` pictures). */
export function imageAsk(n: number): string {
  return `Reply with {"ok": true} if you can see ${n === 1 ? "the picture" : "both pictures"}.`;
}
