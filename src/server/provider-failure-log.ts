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

/** Words as the comparison sees them: NFKC, lower case, letters and digits only. */
function words(text: string): string[] {
  return text.normalize("NFKC").toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

/** What the call sent, as words and pairs of consecutive words, to find echoes of it in an error text. */
export interface PromptEcho {
  words: Set<string>;
  pairs: Set<string>;
  /** Words the prompt only ever writes capitalised: names, as far as text can tell. */
  names: Set<string>;
}

export function promptEcho(texts: string[]): PromptEcho {
  const ws = texts.flatMap(words);
  const pairs = new Set<string>();
  for (let i = 1; i < ws.length; i++) pairs.add(`${ws[i - 1]} ${ws[i]}`);
  const cased = texts.flatMap((t) => t.normalize("NFKC").match(/[\p{L}\p{N}]+/gu) ?? []);
  const lowerSeen = new Set(cased.filter((w) => !/^\p{Lu}/u.test(w)).map((w) => w.toLowerCase()));
  const names = new Set(cased.filter((w) => /^\p{Lu}/u.test(w) && !lowerSeen.has(w.toLowerCase())).map((w) => w.toLowerCase()));
  return { words: new Set(ws), pairs, names };
}

/**
 * The provider's own words on a failed model call, fit for the server log, which never holds
 * case content: quoted passages (any quoting) cut out; then, against what the call sent
 * (`sent`), every echo of it removed: each word that continues a run of two or more words the
 * prompt holds in that order, each number the prompt holds (an MRN, a birth date's parts),
 * and each word the prompt only writes capitalised (a name echoed alone). What is left is the
 * provider's own vocabulary ("maximum context length", "overloaded"), shortened, control
 * characters out. Without `sent` (the prompt unknown) only the code and a length are kept.
 */
export function providerText(message: unknown, sent: PromptEcho | null): string {
  const raw = String(message ?? "");
  if (!sent) return `[provider text withheld: ${raw.length} characters]`;
  const unquoted = raw.normalize("NFKC").replace(QUOTED, " [quoted] ");
  const tokens = unquoted.split(/([\p{L}\p{N}]+)/u);
  // tokens alternate: separator, word, separator, word, …, separator
  const ws = tokens.filter((_, i) => i % 2 === 1);
  const lower = ws.map((w) => w.toLowerCase());
  const echoed = ws.map((_w, i) => {
    const l = lower[i]!;
    if (!sent.words.has(l)) return false;
    if (/\p{N}/u.test(l) || sent.names.has(l)) return true;
    return (i > 0 && sent.pairs.has(`${lower[i - 1]} ${l}`)) || (i + 1 < ws.length && sent.pairs.has(`${l} ${lower[i + 1]}`));
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
  const endpoint = config.llm.azure ? (config.llm.azure.endpoint ?? `https://${config.llm.azure.instanceName}.openai.azure.com`) : (config.llm.baseUrl ?? "https://api.openai.com/v1");
  const sentBy = new Map<string, PromptEcho>();
  return {
    handleChatModelStart(_llm, messages, runId) {
      sentBy.set(runId, promptEcho(messageTexts(messages)));
    },
    handleLLMEnd(_output, runId) {
      sentBy.delete(runId);
    },
    handleLLMError(err: Error, runId: string, _parentRunId?: string, tags?: string[]) {
      const sent = sentBy.get(runId) ?? null;
      sentBy.delete(runId);
      const e = err as Error & { status?: unknown; code?: unknown };
      logger.warn(
        {
          endpoint,
          agent: tags?.find((t) => t.startsWith("medmmv."))?.slice("medmmv.".length),
          status: typeof e.status === "number" ? e.status : undefined,
          code: typeof e.code === "string" ? e.code : undefined,
          type: e.name,
          provider: providerText(e.message, sent),
        },
        "model call failed",
      );
    },
  };
}
