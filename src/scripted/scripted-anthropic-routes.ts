/**
 * A scripted Anthropic Messages API (`POST /v1/messages`) on the scripted server, for the
 * real `@langchain/anthropic` client. It keeps the rules Anthropic documents that a client
 * can break: the `x-api-key` and `anthropic-version` headers, `max_tokens` required,
 * `temperature` within 0–1, roles `user` / `assistant` only, at most four `cache_control`
 * breakpoints; replies are `message` objects with `text` or `tool_use` content blocks and
 * `stop_reason`, usage split by the prompt cache (anthropic-prompt-cache.ts), errors
 * `{ type: "error", error: { type, message } }` with a `request-id` header, including
 * 529 `overloaded_error`. The answer itself comes from the scenario (vendor-relay.ts).
 */
import type http from "node:http";
import { AnthropicPromptCache, countBreakpoints, MAX_CACHE_BREAKPOINTS } from "./anthropic-prompt-cache.js";
import { isRecord } from "../core/contracts/is-record.js";
import { estimateTokens } from "./scripted-wire.js";
import { agentOf, countImages, replyParts, readJsonBody, relayForChoice, writeJson, type ProviderErrors } from "./vendor-relay.js";

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

/** Anthropic's error type for an HTTP status (its documented list). */
export function anthropicErrorType(status: number): string {
  const types: Record<number, string> = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    504: "timeout_error",
    529: "overloaded_error",
  };
  return types[status] ?? (status >= 500 ? "api_error" : "invalid_request_error");
}

let requestCounter = 0;

function sendError(res: http.ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  writeJson(res, status, { type: "error", error: { type: anthropicErrorType(status), message } }, { "request-id": `req_scripted_${++requestCounter}`, ...headers });
}

const ANTHROPIC_ERRORS: ProviderErrors = { isOwn: (json) => isRecord(json) && json.type === "error", send: sendError };

/**
 * Messages content (a string or blocks) as chat-completions content parts. Adjacent text
 * blocks are one text to the model (a prompt split at its cache breakpoints reads as it was
 * written), so they join into one part.
 */
function toChatParts(content: unknown): Array<Record<string, unknown>> {
  return mergeTexts(blockParts(content));
}

function mergeTexts(parts: Array<Record<string, unknown>>): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  for (const p of parts) {
    const last = out.at(-1);
    if (p.type === "text" && last?.type === "text") last.text = `${String(last.text)}${String(p.text)}`;
    else out.push({ ...p });
  }
  return out;
}

function blockParts(content: unknown): Array<Record<string, unknown>> {
  if (typeof content === "string") return [{ type: "text", text: content }];
  if (!Array.isArray(content)) return [];
  return content.filter(isRecord).flatMap((b): Array<Record<string, unknown>> => {
    if (b.type === "text" && typeof b.text === "string") return [{ type: "text", text: b.text }];
    if (b.type === "image" && isRecord(b.source)) {
      const s = b.source;
      const url = s.type === "base64" ? `data:${String(s.media_type)};base64,${String(s.data)}` : String(s.url);
      return [{ type: "image_url", image_url: { url } }];
    }
    if (b.type === "tool_use" || b.type === "tool_result") return [{ type: "text", text: JSON.stringify(b) }];
    return [];
  });
}

/** What the request breaks of the documented rules, or null. */
function invalid(body: Record<string, unknown>): string | null {
  if (typeof body.model !== "string" || !body.model) return "model: Field required";
  if (typeof body.max_tokens !== "number" || !Number.isInteger(body.max_tokens) || body.max_tokens < 1) return "max_tokens: Field required";
  if (!Array.isArray(body.messages) || body.messages.length === 0) return "messages: at least one message is required";
  for (const m of body.messages) if (!isRecord(m) || (m.role !== "user" && m.role !== "assistant")) return `messages: Unexpected role "${isRecord(m) ? String(m.role) : "?"}". The Messages API accepts a top-level \`system\` parameter, not "system" as an input message role.`;
  if (body.temperature !== undefined && (typeof body.temperature !== "number" || body.temperature < 0 || body.temperature > 1)) return "temperature: Input should be less than or equal to 1";
  if (body.stream === true) return "stream: the scripted server answers only stream: false";
  const marks = countBreakpoints(body);
  if (marks > MAX_CACHE_BREAKPOINTS) return `A maximum of ${MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. Found ${marks}.`;
  return null;
}

/** The chat-completions request a Messages request means. */
function toChatRequest(body: Record<string, unknown>): Record<string, unknown> {
  const messages: Array<Record<string, unknown>> = [];
  const system = toChatParts(body.system);
  if (system.length) messages.push({ role: "system", content: system.map((p) => p.text).join("") });
  for (const m of body.messages as Array<Record<string, unknown>>) messages.push({ role: m.role, content: toChatParts(m.content) });
  const chat: Record<string, unknown> = { model: body.model, messages, max_tokens: body.max_tokens };
  if (typeof body.temperature === "number") chat.temperature = body.temperature;
  const tools = Array.isArray(body.tools) ? body.tools.filter(isRecord) : [];
  if (tools.length) {
    chat.tools = tools.map((t) => ({ type: "function", function: { name: t.name, description: t.description, parameters: t.input_schema } }));
    const tc = body.tool_choice;
    if (isRecord(tc) && tc.type === "tool" && typeof tc.name === "string") chat.tool_choice = { type: "function", function: { name: tc.name } };
    else if (isRecord(tc) && tc.type === "none") chat.tool_choice = "none";
  }
  // Structured outputs: output_config.format (json_schema) answers in a text block.
  const format = isRecord(body.output_config) ? body.output_config.format : undefined;
  if (isRecord(format) && format.type === "json_schema") chat.response_format = { type: "json_schema", json_schema: { name: "output", schema: format.schema } };
  return chat;
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
    const chat = toChatRequest(body);
    const messages = chat.messages as Array<Record<string, unknown>>;
    const entry: AnthropicCallLog = { agent: agentOf(messages), model, status: 0, apiKey, version, breakpoints: countBreakpoints(body), inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheCreationTokens: 0, content: [], images: countImages(messages) };
    this.log.push(entry);

    const { status, choice } = await relayForChoice(this.chatUrl(), chat, res, ANTHROPIC_ERRORS);
    entry.status = status;
    if (!choice) return;

    const content: Array<Record<string, unknown>> = [];
    const { text, calls } = replyParts(choice);
    if (text) content.push({ type: "text", text });
    // Claude's tool input is always a JSON object; arguments that are not one come back as the text they are.
    for (const [i, c] of calls.entries()) content.push(c.args ? { type: "tool_use", id: `toolu_scripted_${requestCounter}_${i}`, name: c.name, input: c.args } : { type: "text", text: c.raw });
    const stopReason = choice.finishReason === "length" ? "max_tokens" : content.some((b) => b.type === "tool_use") ? "tool_use" : "end_turn";
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
