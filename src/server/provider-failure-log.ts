import type { CallbackHandlerMethods } from "@langchain/core/callbacks/base";
import type { BaseMessage } from "@langchain/core/messages";
import type { Logger } from "pino";
import type { Config } from "../core/config.js";

/** Longest piece of a provider's error text that is logged. */
const MAX_PROVIDER_TEXT = 200;

/**
 * Quoted passages in any quoting a provider may use: straight double and single quotes, back
 * ticks, curly quotes, guillemets, low-9 quotes. A single-quoted passage may hold apostrophes
 * (`'John O'Brien'`): it runs to the last closing quote before the next space-or-punctuation
 * boundary, so the apostrophe does not end it early and leave the rest of the name behind.
 */
const QUOTED = /"[^"]*"?|`[^`]*`?|“[^”]*”?|„[^“”]*[“”]?|‘[^’]*’?|«[^»]*»?|‹[^›]*›?|(?<![\p{L}\p{N}])'(?:[^']|'(?=[\p{L}\p{N}]))*'?/gu;

/**
 * English function words: they carry nothing of a case, and without them a provider's message
 * ("maximum context length is 8192 tokens") would be masked to nothing whenever a prompt uses them.
 */
const FUNCTION_WORDS = new Set(
  "a an the is are was were be been being this that these those it its of in on at to for from by with as and or not no but if then than your you our we they their there here has have had do does did can could may might must should will would".split(" "),
);

/** Words as the comparison sees them: NFKC, lower case, letters and digits only. */
function words(text: string): string[] {
  return text.normalize("NFKC").toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

/** What the call sent, as the words the comparison sees, to find echoes of it in an error text. */
export interface PromptEcho {
  words: Set<string>;
}

export function promptEcho(texts: string[]): PromptEcho {
  return { words: new Set(texts.flatMap(words)) };
}

/**
 * The provider's own words on a failed model call, fit for the server log, which never holds
 * case content: quoted passages (any quoting) cut out; then, against what the call sent
 * (`sent`), every word the prompt also holds removed, whatever its case: a lone lower-case
 * echo ("hiv", a drug, a surname written small) is as much the case's as a name or an MRN, and
 * telling the provider's vocabulary from the case's by shape leaks. What is left is the
 * provider's own words ("maximum context length", "overloaded") where the prompt does not use
 * them, and function words ("is", "the"), shortened, control characters out. Without `sent` (the prompt unknown) only a length is kept.
 */
export function providerText(message: unknown, sent: PromptEcho | null): string {
  const raw = String(message ?? "");
  if (!sent) return `[provider text withheld: ${raw.length} characters]`;
  const unquoted = raw.normalize("NFKC").replace(QUOTED, " [quoted] ");
  const tokens = unquoted.split(/([\p{L}\p{N}]+)/u);
  // tokens alternate: separator, word, separator, word, …, separator
  const ws = tokens.filter((_, i) => i % 2 === 1);
  const echoed = ws.map((w) => {
    const l = w.toLowerCase();
    return sent.words.has(l) && !FUNCTION_WORDS.has(l);
  });
  let out = "";
  let masking = false;
  for (let i = 0; i < tokens.length; i++) {
    if (i % 2 === 0) {
      if (!masking) out += tokens[i];
      continue;
    }
    const hide = echoed[(i - 1) / 2]!;
    if (hide && !masking) out += "[from the prompt]";
    else if (!hide && masking) out += " ";
    if (!hide) out += tokens[i];
    masking = hide;
  }
  return out
    .replace(/[\p{Cc}\p{Cf}]+/gu, " ")
    .replace(/\s+/g, " ")
    .trim()
    .slice(0, MAX_PROVIDER_TEXT);
}

/** The text parts of the messages LangChain hands a chat model (images and tool calls aside). */
function messageTexts(messages: BaseMessage[][]): string[] {
  const out: string[] = [];
  for (const m of messages.flat()) {
    const c = m.content as unknown;
    if (typeof c === "string") out.push(c);
    else if (Array.isArray(c)) for (const part of c) if (part && typeof part === "object" && typeof (part as { text?: unknown }).text === "string") out.push((part as { text: string }).text);
  }
  return out;
}

/**
 * What a tenant is not told about a failed model call goes to the server log instead: the
 * endpoint, the HTTP status and the provider's message with anything of the prompt removed
 * (results and events say only what failed and what to do, docs/operations.md#threat-model).
 * One line per failed attempt. The prompt of each run is held from its start to its end only.
 */
export function providerFailureLog(config: Config, logger: Logger): CallbackHandlerMethods {
  // Where the call went, as the client resolved it (its run's metadata: Anthropic's, Gemini's, Bedrock's or Vertex AI's
  // endpoint, a role's own); the configured OpenAI-compatible endpoint for a run that does not say (a program's own model).
  const configured = config.llm.azure ? (config.llm.azure.endpoint ?? `https://${config.llm.azure.instanceName}.openai.azure.com`) : (config.llm.baseUrl ?? "https://api.openai.com/v1");
  const sentBy = new Map<string, { echo: PromptEcho; endpoint: string }>();
  return {
    handleChatModelStart(_llm, messages, runId, _parentRunId, _extraParams, _tags, metadata) {
      const endpoint = typeof metadata?.["endpoint"] === "string" ? metadata["endpoint"] : configured;
      sentBy.set(runId, { echo: promptEcho(messageTexts(messages)), endpoint });
    },
    handleLLMEnd(_output, runId) {
      sentBy.delete(runId);
    },
    handleLLMError(err: Error, runId: string, _parentRunId?: string, tags?: string[]) {
      const run = sentBy.get(runId);
      const sent = run?.echo ?? null;
      const endpoint = run?.endpoint ?? configured;
      sentBy.delete(runId);
      const e = err as Error & { status?: unknown; code?: unknown; $metadata?: { httpStatusCode?: unknown } };
      logger.warn(
        {
          endpoint,
          agent: tags?.find((t) => t.startsWith("medmmv."))?.slice("medmmv.".length),
          // The AWS SDK's exceptions (Bedrock) carry their status in $metadata.
          status: typeof e.status === "number" ? e.status : typeof e.$metadata?.httpStatusCode === "number" ? e.$metadata.httpStatusCode : undefined,
          code: typeof e.code === "string" ? e.code : undefined,
          type: e.name,
          provider: providerText(e.message, sent),
        },
        "model call failed",
      );
    },
  };
}
