/**
 * A scripted Amazon Bedrock Converse endpoint (`POST /model/{modelId}/converse`,
 * docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html) on the scripted
 * server, for the real `@langchain/aws` ChatBedrockConverse and the AWS SDK under it. It keeps
 * what AWS documents that a client can get wrong: a SigV4-signed request (`Authorization:
 * AWS4-HMAC-SHA256 Credential=<key id>/<date>/<region>/bedrock/aws4_request, …`, the standard
 * credential chain's keys); `messages` of `user` / `assistant` with `content` blocks (`text`,
 * `image: { format, source: { bytes } }`), `system` blocks, `inferenceConfig`; structured output
 * through `toolConfig.tools[].toolSpec.inputSchema.json` with a forced `toolChoice.tool`.
 * Replies: `output.message.content` (`text` or `toolUse { toolUseId, name, input }`),
 * `stopReason` (`end_turn`, `tool_use`, `max_tokens`), `usage { inputTokens, outputTokens,
 * totalTokens }`, `metrics`. Errors: the status with `x-amzn-ErrorType` naming the exception
 * (ValidationException 400, AccessDeniedException 403, ThrottlingException 429) and
 * `{ message }`. The answer comes from the scenario (vendor-relay.ts).
 */
import type http from "node:http";
import { isRecord } from "../core/contracts/is-record.js";
import { estimateTokens } from "./scripted-wire.js";
import { agentOf, countImages, readJsonBody, relayForChoice, replyParts, writeJson, type ProviderErrors } from "./vendor-relay.js";

export const BEDROCK_CONVERSE_PATH = /^\/model\/([^/]+)\/converse$/;

export interface BedrockCallLog {
  agent: string;
  model: string;
  status: number;
  /** The access key id of the SigV4 credential scope (null: the request was not signed). */
  accessKeyId: string | null;
  region: string | null;
  /** The session token header of temporary credentials (an assumed IAM role's), when sent. */
  sessionToken: string | null;
  structured: "toolUse" | "none";
  images: number;
  temperature: number | null;
}

const EXCEPTION: Record<number, string> = { 400: "ValidationException", 403: "AccessDeniedException", 404: "ResourceNotFoundException", 429: "ThrottlingException", 500: "InternalServerException", 503: "ServiceUnavailableException" };

function sendError(res: http.ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  const type = EXCEPTION[status] ?? (status >= 500 ? "InternalServerException" : "ValidationException");
  writeJson(res, status, { message }, { "x-amzn-errortype": `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`, ...headers });
}

const BEDROCK_ERRORS: ProviderErrors = { isOwn: () => false, send: sendError };

/** The SigV4 credential scope of the Authorization header: `<key id>/<date>/<region>/<service>/aws4_request`. */
function credentialScope(req: http.IncomingMessage): { accessKeyId: string; region: string; service: string } | null {
  const auth = req.headers.authorization;
  const m = typeof auth === "string" ? /^AWS4-HMAC-SHA256 Credential=([^/]+)\/\d{8}\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=[^,]+, Signature=[0-9a-f]{64}$/.exec(auth) : null;
  return m ? { accessKeyId: m[1]!, region: m[2]!, service: m[3]! } : null;
}

function toChatContent(content: unknown): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  for (const b of Array.isArray(content) ? content.filter(isRecord) : []) {
    if (typeof b.text === "string") out.push({ type: "text", text: b.text });
    else if (isRecord(b.image) && isRecord(b.image.source) && typeof b.image.source.bytes === "string")
      out.push({ type: "image_url", image_url: { url: `data:image/${String(b.image.format)};base64,${b.image.source.bytes}` } });
    else if (isRecord(b.toolUse) || isRecord(b.toolResult)) out.push({ type: "text", text: JSON.stringify(b) });
  }
  return out;
}

function invalid(body: Record<string, unknown>): string | null {
  if (!Array.isArray(body.messages) || body.messages.length === 0) return "A conversation must start with a user message. Try again with a conversation that starts with a user message.";
  for (const m of body.messages) {
    if (!isRecord(m) || (m.role !== "user" && m.role !== "assistant")) return "1 validation error detected: Value at 'messages.role' failed to satisfy constraint: Member must satisfy enum value set: [user, assistant]";
    if (!Array.isArray(m.content) || m.content.length === 0) return "The content field in the Message object is empty. Add a ContentBlock object to the content field and try again.";
  }
  const t = isRecord(body.inferenceConfig) ? body.inferenceConfig.temperature : undefined;
  if (t !== undefined && (typeof t !== "number" || t < 0 || t > 1)) return "1 validation error detected: Value at 'inferenceConfig.temperature' failed to satisfy constraint: Member must have value less than or equal to 1";
  return null;
}

function toChatRequest(model: string, body: Record<string, unknown>): Record<string, unknown> {
  const messages: Array<Record<string, unknown>> = [];
  const system = (Array.isArray(body.system) ? body.system.filter(isRecord) : []).map((s) => (typeof s.text === "string" ? s.text : "")).join("");
  if (system) messages.push({ role: "system", content: system });
  for (const m of body.messages as Array<Record<string, unknown>>) messages.push({ role: m.role, content: toChatContent(m.content) });
  const chat: Record<string, unknown> = { model, messages };
  const ic = isRecord(body.inferenceConfig) ? body.inferenceConfig : {};
  if (typeof ic.temperature === "number") chat.temperature = ic.temperature;
  if (typeof ic.maxTokens === "number") chat.max_tokens = ic.maxTokens;
  const tc = isRecord(body.toolConfig) ? body.toolConfig : {};
  const specs = (Array.isArray(tc.tools) ? tc.tools.filter(isRecord) : []).map((t) => (isRecord(t.toolSpec) ? t.toolSpec : null)).filter((s): s is Record<string, unknown> => s !== null);
  if (specs.length) {
    chat.tools = specs.map((s) => ({ type: "function", function: { name: s.name, description: s.description, parameters: isRecord(s.inputSchema) ? s.inputSchema.json : undefined } }));
    const choice = isRecord(tc.toolChoice) ? tc.toolChoice : {};
    const forced = isRecord(choice.tool) && typeof choice.tool.name === "string" ? choice.tool.name : typeof specs[0]!.name === "string" && (isRecord(choice.any) || specs.length === 1) ? specs[0]!.name : null;
    if (forced) chat.tool_choice = { type: "function", function: { name: forced } };
  }
  return chat;
}

export class ScriptedBedrockRoutes {
  private log: BedrockCallLog[] = [];

  constructor(private readonly chatUrl: () => string) {}

  calls(): BedrockCallLog[] {
    return this.log.map((e) => ({ ...e }));
  }

  reset(): void {
    this.log = [];
  }

  async handle(req: http.IncomingMessage, res: http.ServerResponse, model: string): Promise<void> {
    if (req.method !== "POST") {
      req.resume();
      sendError(res, 400, `method ${req.method ?? ""} not allowed`);
      return;
    }
    const scope = credentialScope(req);
    const read = await readJsonBody(req);
    if (read === null) return;
    // Bedrock takes only SigV4-signed requests for the bedrock service (an unsigned one is 403).
    if (!scope || scope.service !== "bedrock") return sendError(res, 403, "Authorization header requires 'Credential' parameter. Authorization header requires 'Signature' parameter.");
    if (!read.ok) return sendError(res, read.status, read.message);
    if (!isRecord(read.body)) return sendError(res, 400, "Malformed input request, please reformat your input and try again.");
    const problem = invalid(read.body);
    if (problem) return sendError(res, 400, problem);
    const chat = toChatRequest(model, read.body);
    const entry: BedrockCallLog = {
      agent: agentOf(chat.messages as Array<Record<string, unknown>>),
      model,
      status: 0,
      accessKeyId: scope.accessKeyId,
      region: scope.region,
      sessionToken: typeof req.headers["x-amz-security-token"] === "string" ? req.headers["x-amz-security-token"] : null,
      structured: chat.tools ? "toolUse" : "none",
      images: countImages(chat.messages as Array<Record<string, unknown>>),
      temperature: typeof chat.temperature === "number" ? chat.temperature : null,
    };
    this.log.push(entry);
    const { status, choice } = await relayForChoice(this.chatUrl(), chat, res, BEDROCK_ERRORS);
    entry.status = status;
    if (!choice) return;
    const content: Array<Record<string, unknown>> = [];
    const { text, calls } = replyParts(choice);
    if (text) content.push({ text });
    calls.forEach((c, i) => content.push(c.args ? { toolUse: { toolUseId: `tooluse_scripted_${this.log.length}_${i}`, name: c.name, input: c.args } } : { text: c.raw }));
    const inputTokens = typeof choice.usage.prompt_tokens === "number" ? choice.usage.prompt_tokens : 0;
    const outputTokens = typeof choice.usage.completion_tokens === "number" ? choice.usage.completion_tokens : estimateTokens(text.length);
    writeJson(res, 200, {
      output: { message: { role: "assistant", content } },
      stopReason: choice.finishReason === "length" ? "max_tokens" : calls.length ? "tool_use" : "end_turn",
      usage: { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens },
      metrics: { latencyMs: 1 },
    });
  }
}
