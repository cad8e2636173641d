/**
 * A scripted Anthropic Messages API (`POST /v1/messages`) on the scripted server, for the
 * real `@langchain/anthropic` client. It keeps the rules Anthropic documents that a client
 * can break: the `x-api-key` and `anthropic-version` headers, `max_tokens` required,
 * `temperature` within 0–1, roles `user` / `assistant` only, at most four `cache_control`
 * breakpoints; replies are `message` objects with `text` or `tool_use` content blocks and
 * `stop_reason`, usage split by the prompt cache (anthropic-prompt-cache.ts), errors
 * `{ type: "error", error: { type, message } }` with a `request-id` header, including
 * 529 `overloaded_error`. The Messages wire itself (rules, translation, reply) is shared with
 * Claude on Vertex AI (anthropic-messages-wire.ts). The answer comes from the scenario (vendor-relay.ts).
 */
import type http from "node:http";
import { AnthropicPromptCache, countBreakpoints } from "./anthropic-prompt-cache.js";
import { anthropicErrorBody, isAnthropicError, messagesContent, messagesRuleBroken, toChatRequest } from "./anthropic-messages-wire.js";
import { isRecord } from "../core/contracts/is-record.js";
import { estimateTokens } from "./scripted-wire.js";
import { agentOf, countImages, readJsonBody, relayForChoice, writeJson, type ProviderErrors } from "./vendor-relay.js";

export const ANTHROPIC_MESSAGES_PATH = "/v1/messages";

/** One Messages call as the scripted endpoint saw it. */
export interface AnthropicCallLog {
  /** The medmmv agent the prompt names (as the scripted chat route routes it). */
  agent: string;
  model: string;
  status: number;
  apiKey: string | null;
  version: string | null;
  breakpoints: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheCreationTokens: number;
  /** The reply's content block types (text, tool_use). */
  content: string[];
  images: number;
}

let requestCounter = 0;

function sendError(res: http.ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  writeJson(res, status, anthropicErrorBody(status, message), { "request-id": `req_scripted_${++requestCounter}`, ...headers });
}

const ANTHROPIC_ERRORS: ProviderErrors = { isOwn: isAnthropicError, send: sendError };

/** What the request breaks of the documented rules, or null: Anthropic's own API names the model in the body. */
function invalid(body: Record<string, unknown>): string | null {
  if (typeof body.model !== "string" || !body.model) return "model: Field required";
  return messagesRuleBroken(body);
}

export class ScriptedAnthropicRoutes {
  readonly cache: AnthropicPromptCache;
  private log: AnthropicCallLog[] = [];

  constructor(
    private readonly chatUrl: () => string,
    now?: () => number,
  ) {
    this.cache = new AnthropicPromptCache(now);
  }

  calls(): AnthropicCallLog[] {
    return this.log.map((e) => ({ ...e, content: [...e.content] }));
  }

  reset(): void {
    this.log = [];
    this.cache.reset();
  }

  async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    if (req.method !== "POST") {
      req.resume();
      sendError(res, 405, `method ${req.method ?? ""} not allowed on ${ANTHROPIC_MESSAGES_PATH}`);
      return;
    }
    const apiKey = typeof req.headers["x-api-key"] === "string" ? req.headers["x-api-key"] : null;
    const version = typeof req.headers["anthropic-version"] === "string" ? req.headers["anthropic-version"] : null;
    const read = await readJsonBody(req);
    if (read === null) return;
    if (!apiKey) return sendError(res, 401, "x-api-key header is required");
    if (!version) return sendError(res, 400, "anthropic-version: header is required");
    if (!read.ok) return sendError(res, read.status, read.message);
    if (!isRecord(read.body)) return sendError(res, 400, "request body must be a JSON object");
    const body = read.body;
    const problem = invalid(body);
    if (problem) return sendError(res, 400, problem);
    const model = body.model as string;
    const chat = toChatRequest(model, body);
    const messages = chat.messages as Array<Record<string, unknown>>;
    const entry: AnthropicCallLog = { agent: agentOf(messages), model, status: 0, apiKey, version, breakpoints: countBreakpoints(body), inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheCreationTokens: 0, content: [], images: countImages(messages) };
    this.log.push(entry);

    const { status, choice } = await relayForChoice(this.chatUrl(), chat, res, ANTHROPIC_ERRORS);
    entry.status = status;
    if (!choice) return;

    const { content, stopReason, text } = messagesContent(choice, `toolu_scripted_${requestCounter}`);
    const usage = this.cache.use(model, body);
    const outputTokens = typeof choice.usage.completion_tokens === "number" ? choice.usage.completion_tokens : estimateTokens(text.length);
    Object.assign(entry, { inputTokens: usage.inputTokens, outputTokens, cacheReadTokens: usage.cacheReadTokens, cacheCreationTokens: usage.cacheCreationTokens, content: content.map((b) => String(b.type)) });
    writeJson(
      res,
      200,
      {
        id: `msg_scripted_${++requestCounter}`,
        type: "message",
        role: "assistant",
        model,
        content,
        stop_reason: stopReason,
        stop_sequence: null,
        usage: { input_tokens: usage.inputTokens, output_tokens: outputTokens, cache_creation_input_tokens: usage.cacheCreationTokens, cache_read_input_tokens: usage.cacheReadTokens },
      },
      { "request-id": `req_scripted_${requestCounter}` },
    );
  }
}
