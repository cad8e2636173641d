/**
 * Anthropic's Messages wire, shared by the two scripted endpoints that speak it: Anthropic's own
 * API (`POST /v1/messages`, scripted-anthropic-routes.ts) and Claude on Vertex AI
 * (`…/publishers/anthropic/models/{model}:rawPredict`, scripted-vertex-routes.ts), whose body is
 * "almost identical to the Messages API" with two differences (docs.anthropic.com "Claude on
 * Vertex AI"; cloud.google.com/vertex-ai/generative-ai/docs/partner-models/claude/use-claude):
 * `model` is named in the URL, not the body, and `anthropic_version` is in the body. What the
 * request breaks of the documented rules, the chat-completions request it means (the scripted
 * chat route answers it: vendor-relay.ts) and the `message` reply built from that answer are
 * written once here.
 */
import { countBreakpoints, MAX_CACHE_BREAKPOINTS } from "./anthropic-prompt-cache.js";
import { isRecord } from "../core/contracts/is-record.js";
import { replyParts, type ChatChoice } from "./vendor-relay.js";

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

/** Anthropic's error body `{ type: "error", error: { type, message } }` (and its `request_id`, which Vertex AI's replies carry in the body). */
export function anthropicErrorBody(status: number, message: string, requestId?: string): Record<string, unknown> {
  return { type: "error", error: { type: anthropicErrorType(status), message }, ...(requestId ? { request_id: requestId } : {}) };
}

export const isAnthropicError = (json: unknown): boolean => isRecord(json) && json.type === "error" && isRecord(json.error);

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

/**
 * What a Messages body breaks of the rules both endpoints share (`max_tokens` required, roles
 * `user` / `assistant` only, `temperature` within 0–1, at most four `cache_control` breakpoints),
 * or null. Where the model is named is the caller's rule.
 */
export function messagesRuleBroken(body: Record<string, unknown>): string | null {
  if (typeof body.max_tokens !== "number" || !Number.isInteger(body.max_tokens) || body.max_tokens < 1) return "max_tokens: Field required";
  if (!Array.isArray(body.messages) || body.messages.length === 0) return "messages: at least one message is required";
  for (const m of body.messages) if (!isRecord(m) || (m.role !== "user" && m.role !== "assistant")) return `messages: Unexpected role "${isRecord(m) ? String(m.role) : "?"}". The Messages API accepts a top-level \`system\` parameter, not "system" as an input message role.`;
  if (body.temperature !== undefined && (typeof body.temperature !== "number" || body.temperature < 0 || body.temperature > 1)) return "temperature: Input should be less than or equal to 1";
  if (body.stream === true) return "stream: the scripted server answers only stream: false";
  const marks = countBreakpoints(body);
  if (marks > MAX_CACHE_BREAKPOINTS) return `A maximum of ${MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. Found ${marks}.`;
  return null;
}

/**
 * How a Messages request asks for JSON: a tool it must call (`tool_choice` `{ type: "tool", name }`,
 * or `{ type: "any" }`: one of the tools, which with one tool is that one), a tool it may call, or neither.
 */
export function messagesToolMode(body: Record<string, unknown>): "forcedTool" | "tools" | "none" {
  const tools = Array.isArray(body.tools) ? body.tools.filter(isRecord) : [];
  if (!tools.length) return "none";
  const tc = body.tool_choice;
  return isRecord(tc) && (tc.type === "tool" || tc.type === "any") ? "forcedTool" : "tools";
}

/** The chat-completions request a Messages request for `model` means. */
export function toChatRequest(model: string, body: Record<string, unknown>): Record<string, unknown> {
  const messages: Array<Record<string, unknown>> = [];
  const system = toChatParts(body.system);
  if (system.length) messages.push({ role: "system", content: system.map((p) => p.text).join("") });
  for (const m of body.messages as Array<Record<string, unknown>>) messages.push({ role: m.role, content: toChatParts(m.content) });
  const chat: Record<string, unknown> = { model, messages, max_tokens: body.max_tokens };
  if (typeof body.temperature === "number") chat.temperature = body.temperature;
  const tools = Array.isArray(body.tools) ? body.tools.filter(isRecord) : [];
  if (tools.length) {
    chat.tools = tools.map((t) => ({ type: "function", function: { name: t.name, description: t.description, parameters: t.input_schema } }));
    const tc = body.tool_choice;
    if (isRecord(tc) && tc.type === "tool" && typeof tc.name === "string") chat.tool_choice = { type: "function", function: { name: tc.name } };
    else if (isRecord(tc) && tc.type === "any") chat.tool_choice = "required";
    else if (isRecord(tc) && tc.type === "none") chat.tool_choice = "none";
  }
  // Structured outputs: output_config.format (json_schema) answers in a text block.
  const format = isRecord(body.output_config) ? body.output_config.format : undefined;
  if (isRecord(format) && format.type === "json_schema") chat.response_format = { type: "json_schema", json_schema: { name: "output", schema: format.schema } };
  return chat;
}

/**
 * A `message` reply's content and stop_reason from the chat route's answer. Claude's tool input
 * is always a JSON object; arguments that are not one come back as the text they are.
 */
export function messagesContent(choice: ChatChoice, toolIdPrefix: string): { content: Array<Record<string, unknown>>; stopReason: string; text: string } {
  const content: Array<Record<string, unknown>> = [];
  const { text, calls } = replyParts(choice);
  if (text) content.push({ type: "text", text });
  for (const [i, c] of calls.entries()) content.push(c.args ? { type: "tool_use", id: `${toolIdPrefix}_${i}`, name: c.name, input: c.args } : { type: "text", text: c.raw });
  // A chat answer the script marks as a refusal is Claude's `stop_reason: "refusal"` (Claude 4 models' safety
  // classifiers: docs.anthropic.com "Handling stop reasons").
  const stopReason = choice.finishReason === "length" ? "max_tokens" : choice.finishReason === "refusal" ? "refusal" : content.some((b) => b.type === "tool_use") ? "tool_use" : "end_turn";
  return { content, stopReason, text };
}
