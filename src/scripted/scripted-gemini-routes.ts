/**
 * A scripted Gemini API `generateContent` endpoint
 * (`POST /v1beta/models/{model}:generateContent`) on the scripted server, for the real
 * `@langchain/google-genai` client. It keeps what Google documents that a client can get
 * wrong: a key (`x-goog-api-key` header or `key` query parameter), `contents` with `parts`
 * (`text`, `inlineData` images), roles `user` / `model`, `generationConfig.temperature`
 * within 0–2; structured output through `functionDeclarations` with a forced
 * `functionCallingConfig`, or `responseSchema` with `responseMimeType: application/json`.
 * Replies carry `candidates[].content.parts` (`text` or `functionCall`), `finishReason` and
 * `usageMetadata`, with `cachedContentTokenCount` from implicit caching as Gemini 2.5 does
 * it (a repeated prompt prefix, from the model's minimum size: prompt-cache.ts). Errors are
 * `{ error: { code, message, status } }`. The answer comes from the scenario (vendor-relay.ts).
 */
import type http from "node:http";
import { SimulatedPromptCache } from "./prompt-cache.js";
import { isRecord } from "../core/contracts/is-record.js";
import { estimateTokens } from "./scripted-wire.js";
import { agentOf, countImages, replyParts, readJsonBody, relayForChoice, writeJson, type ChatChoice, type ProviderErrors } from "./vendor-relay.js";

export const GEMINI_PATH = /^\/(v1beta|v1)\/models\/([^/:]+):generateContent$/;

export interface GeminiCallLog {
  /** The medmmv agent the prompt names (as the scripted chat route routes it). */
  agent: string;
  model: string;
  status: number;
  apiKey: string | null;
  promptTokens: number;
  candidatesTokens: number;
  thoughtsTokens: number;
  cachedTokens: number;
  /** How JSON was asked for: a forced function call, a response schema, or neither. */
  structured: "functionCall" | "responseSchema" | "none";
  images: number;
  temperature: number | null;
}

/** Google's canonical status name for an HTTP status. */
export function geminiStatus(status: number): string {
  const names: Record<number, string> = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    413: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
  };
  return names[status] ?? (status >= 500 ? "INTERNAL" : "FAILED_PRECONDITION");
}

function sendError(res: http.ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  writeJson(res, status, { error: { code: status, message, status: geminiStatus(status) } }, headers);
}

const isGeminiError = (json: unknown) => isRecord(json) && isRecord(json.error) && typeof json.error.status === "string";
/**
 * The refusals the OpenAI-compatible profile scripts (provider-profiles.ts `gemini-openai`) come
 * as that endpoint's array `[{ error }]`; the Gemini API itself answers the one object
 * (`{ error: { code, message, status, details } }`, ai.google.dev/gemini-api/docs/troubleshooting).
 */
const GEMINI_ERRORS: ProviderErrors = {
  isOwn: isGeminiError,
  ownFromOtherShape: (json) => (Array.isArray(json) && json.length === 1 && isGeminiError(json[0]) ? json[0] : null),
  send: sendError,
};

/** The minimum prompt implicit caching serves (Gemini 2.5 Flash 1024 tokens, Pro 4096). */
function implicitCacheMinimum(model: string): number {
  return /pro/.test(model) ? 4096 : 1024;
}

function toChatParts(parts: unknown): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  for (const p of Array.isArray(parts) ? parts.filter(isRecord) : []) {
    if (typeof p.text === "string") {
      const last = out.at(-1);
      if (last?.type === "text") last.text = `${String(last.text)}${p.text}`;
      else out.push({ type: "text", text: p.text });
    } else if (isRecord(p.inlineData)) out.push({ type: "image_url", image_url: { url: `data:${String(p.inlineData.mimeType)};base64,${String(p.inlineData.data)}` } });
    else if (isRecord(p.functionCall) || isRecord(p.functionResponse)) out.push({ type: "text", text: JSON.stringify(p) });
  }
  return out;
}

/** Why Google refuses a generateContent body (the same rules on Vertex AI), or null. */
export function invalid(body: Record<string, unknown>): string | null {
  if (!Array.isArray(body.contents) || body.contents.length === 0) return "* GenerateContentRequest.contents: contents is not specified";
  for (const c of body.contents) {
    if (!isRecord(c) || !Array.isArray(c.parts) || c.parts.length === 0) return "* GenerateContentRequest.contents[].parts: contents.parts must not be empty.";
    if (c.role !== undefined && c.role !== "user" && c.role !== "model" && c.role !== "function") return `Please use a valid role: user, model.`;
  }
  const t = isRecord(body.generationConfig) ? body.generationConfig.temperature : undefined;
  if (t !== undefined && t !== null && (typeof t !== "number" || t < 0 || t > 2)) return "* GenerateContentRequest.generation_config.temperature: must be in the range [0.0, 2.0]";
  return null;
}

export function structuredMode(body: Record<string, unknown>): GeminiCallLog["structured"] {
  const declarations = (Array.isArray(body.tools) ? body.tools.filter(isRecord) : []).flatMap((t) => (Array.isArray(t.functionDeclarations) ? t.functionDeclarations : []));
  if (declarations.length) return "functionCall";
  const g = isRecord(body.generationConfig) ? body.generationConfig : {};
  return g.responseSchema !== undefined || g.responseMimeType === "application/json" ? "responseSchema" : "none";
}

/**
 * A generateContent candidate's parts, finish reason and token counts from the chat route's answer (the
 * Gemini API's and Vertex AI's replies alike). Gemini's function-call arguments are always an object;
 * anything else comes back as text.
 */
export function generateContentReply(choice: ChatChoice): { parts: Array<Record<string, unknown>>; finishReason: "MAX_TOKENS" | "STOP"; promptTokens: number; candidatesTokens: number } {
  const parts: Array<Record<string, unknown>> = [];
  const { text, calls } = replyParts(choice);
  if (text) parts.push({ text });
  for (const c of calls) parts.push(c.args ? { functionCall: { name: c.name, args: c.args } } : { text: c.raw });
  const promptTokens = typeof choice.usage.prompt_tokens === "number" ? choice.usage.prompt_tokens : 0;
  const candidatesTokens = typeof choice.usage.completion_tokens === "number" ? choice.usage.completion_tokens : estimateTokens(text.length);
  return { parts, finishReason: choice.finishReason === "length" ? "MAX_TOKENS" : "STOP", promptTokens, candidatesTokens };
}

export function toChatRequest(model: string, body: Record<string, unknown>): Record<string, unknown> {
  const messages: Array<Record<string, unknown>> = [];
  const sys = isRecord(body.systemInstruction) ? toChatParts(body.systemInstruction.parts) : [];
  if (sys.length) messages.push({ role: "system", content: sys.map((p) => p.text).join("") });
  for (const c of body.contents as Array<Record<string, unknown>>) messages.push({ role: c.role === "model" ? "assistant" : "user", content: toChatParts(c.parts) });
  const g = isRecord(body.generationConfig) ? body.generationConfig : {};
  const chat: Record<string, unknown> = { model, messages };
  if (typeof g.temperature === "number") chat.temperature = g.temperature;
  const declarations = (Array.isArray(body.tools) ? body.tools.filter(isRecord) : []).flatMap((t) => (Array.isArray(t.functionDeclarations) ? t.functionDeclarations.filter(isRecord) : []));
  if (declarations.length) {
    chat.tools = declarations.map((d) => ({ type: "function", function: { name: d.name, description: d.description, parameters: d.parameters } }));
    const fcc = isRecord(body.toolConfig) && isRecord(body.toolConfig.functionCallingConfig) ? body.toolConfig.functionCallingConfig : {};
    const allowed = Array.isArray(fcc.allowedFunctionNames) ? fcc.allowedFunctionNames : [];
    if (fcc.mode === "NONE") chat.tool_choice = "none";
    else if (typeof allowed[0] === "string") chat.tool_choice = { type: "function", function: { name: allowed[0] } };
  } else if (g.responseSchema !== undefined) chat.response_format = { type: "json_schema", json_schema: { name: "response", schema: g.responseSchema } };
  else if (g.responseMimeType === "application/json") chat.response_format = { type: "json_object" };
  return chat;
}

export class ScriptedGeminiRoutes {
  private log: GeminiCallLog[] = [];
  private cache = new Map<number, SimulatedPromptCache>();
  /** Implicit caching is on for Gemini 2.5 models by default; a test may turn it off. */
  implicitCaching = true;
  /**
   * Thought tokens each reply states (`usageMetadata.thoughtsTokenCount`, billed as output
   * and outside `candidatesTokenCount`, as Gemini 2.5's thinking reports them); 0: none stated.
   */
  thoughtsTokens = 0;

  constructor(private readonly chatUrl: () => string) {}

  calls(): GeminiCallLog[] {
    return this.log.map((e) => ({ ...e }));
  }

  reset(): void {
    this.log = [];
    this.cache = new Map();
    this.implicitCaching = true;
    this.thoughtsTokens = 0;
  }

  private cachedTokens(model: string, messages: unknown[], promptTokens: number): number {
    if (!this.implicitCaching) return 0;
    const minimum = implicitCacheMinimum(model);
    let c = this.cache.get(minimum);
    if (!c) {
      c = new SimulatedPromptCache({ minPromptTokens: minimum, blockTokens: 1 });
      this.cache.set(minimum, c);
    }
    return c.lookup(messages, promptTokens);
  }

  async handle(req: http.IncomingMessage, res: http.ServerResponse, model: string): Promise<void> {
    if (req.method !== "POST") {
      req.resume();
      sendError(res, 405, `method ${req.method ?? ""} not allowed`);
      return;
    }
    const query = new URL(req.url ?? "/", "http://scripted.invalid").searchParams;
    const apiKey = typeof req.headers["x-goog-api-key"] === "string" ? req.headers["x-goog-api-key"] : query.get("key");
    const read = await readJsonBody(req);
    if (read === null) return;
    if (!apiKey) return sendError(res, 403, "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.");
    if (!read.ok) return sendError(res, read.status, read.message);
    if (!isRecord(read.body)) return sendError(res, 400, "Invalid JSON payload received.");
    const body = read.body;
    const problem = invalid(body);
    if (problem) return sendError(res, 400, problem);
    const chat = toChatRequest(model, body);
    const entry: GeminiCallLog = {
      agent: agentOf(chat.messages as Array<Record<string, unknown>>),
      model,
      status: 0,
      apiKey,
      promptTokens: 0,
      candidatesTokens: 0,
      thoughtsTokens: 0,
      cachedTokens: 0,
      structured: structuredMode(body),
      images: countImages(chat.messages as Array<Record<string, unknown>>),
      temperature: typeof chat.temperature === "number" ? chat.temperature : null,
    };
    this.log.push(entry);

    const { status, choice } = await relayForChoice(this.chatUrl(), chat, res, GEMINI_ERRORS);
    entry.status = status;
    if (!choice) return;

    const { parts, finishReason, promptTokens, candidatesTokens } = generateContentReply(choice);
    const cachedTokens = this.cachedTokens(model, chat.messages as unknown[], promptTokens);
    const thoughtsTokens = this.thoughtsTokens;
    Object.assign(entry, { promptTokens, candidatesTokens, thoughtsTokens, cachedTokens });
    writeJson(res, 200, {
      candidates: [{ content: { role: "model", parts }, finishReason, index: 0 }],
      usageMetadata: {
        promptTokenCount: promptTokens,
        candidatesTokenCount: candidatesTokens,
        totalTokenCount: promptTokens + candidatesTokens + thoughtsTokens,
        ...(cachedTokens > 0 ? { cachedContentTokenCount: cachedTokens } : {}),
        ...(thoughtsTokens > 0 ? { thoughtsTokenCount: thoughtsTokens } : {}),
      },
      modelVersion: model,
      responseId: `scripted-${this.log.length}`,
    });
  }
}
