import { VERSION } from "../version.js";
import { HttpStatusError, postJson } from "./http-transport.js";
import { randomBytes } from "node:crypto";
import { JSON_SAFE_URL, type ChatMessage, type ContentPart } from "./messages.js";

/**
 * The OpenAI chat-completions wire format, spoken directly: OpenAI, vLLM, Ollama,
 * Together and the other OpenAI-compatible servers all accept this request.
 *
 * Why not `ChatOpenAI` (LangChain) or the OpenAI SDK: the pipeline needs one
 * non-streaming JSON request per call and reads three fields of the reply; the layers
 * around it (message classes, callbacks, runnable config, the SDK's request builder)
 * cost about 3 ms of CPU per call on the benchmark machine, several times the HTTP
 * request itself (`npm run bench`, orchestration overhead), and that CPU queues on the
 * event loop behind every burst of parallel calls. Retries, timeouts, validation and
 * re-asks stay in LlmClient and retry.ts, as before.
 */
export const OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1";

export interface ChatCompletionRequest {
  model: string;
  temperature: number;
  messages: ChatMessage[];
  /** Prebuilt structured-output options: response_format, or tools + tool_choice. */
  format: Record<string, unknown>;
}

export interface ChatCompletionReply {
  /** The reply's JSON value, or undefined when the model gave nothing parseable. */
  json: unknown;
  promptTokens?: number;
  completionTokens?: number;
  finishReason?: string;
}

interface WireReply {
  error?: { message?: unknown; code?: unknown } | string;
  choices?: Array<{
    finish_reason?: string | null;
    message?: { content?: unknown; refusal?: unknown; tool_calls?: Array<{ function?: { arguments?: unknown } }> };
  }>;
  usage?: { prompt_tokens?: unknown; completion_tokens?: unknown };
}

export class ChatCompletionsEndpoint {
  private readonly url: string;
  private readonly headers: Record<string, string>;

  constructor(baseUrl: string | null, apiKey: string | null) {
    this.url = `${(baseUrl ?? OPENAI_DEFAULT_BASE_URL).replace(/\/+$/, "")}/chat/completions`;
    this.headers = { "user-agent": `medmmv/${VERSION}` };
    if (apiKey) this.headers.authorization = `Bearer ${apiKey}`;
  }

  async complete(req: ChatCompletionRequest, signal: AbortSignal): Promise<ChatCompletionReply> {
    const body = encodeRequest(req);
    const reply = (await postJson(this.url, body, { headers: this.headers, signal })) as WireReply | null;
    // Some gateways answer 200 with an error object and no choices: a provider fault
    // (retried like a 502), not a reply to re-ask about.
    if (reply && !Array.isArray(reply.choices) && reply.error !== undefined) {
      const e = reply.error;
      const message = typeof e === "string" ? e : typeof e?.message === "string" ? e.message : "no message";
      const code = typeof e === "object" && typeof e?.code === "number" && e.code >= 400 && e.code <= 599 ? e.code : 502;
      throw new HttpStatusError(code, {}, `provider answered 200 with an error (${code}): ${message.slice(0, 300)}`);
    }
    const choice = reply?.choices?.[0];
    const usage = reply?.usage;
    return {
      json: readReplyJson(choice?.message),
      promptTokens: typeof usage?.prompt_tokens === "number" ? usage.prompt_tokens : undefined,
      completionTokens: typeof usage?.completion_tokens === "number" ? usage.completion_tokens : undefined,
      finishReason: choice?.finish_reason ?? undefined,
    };
  }
}

/** Per process, so no text of a case can spell a placeholder. */
const PLACEHOLDER_NONCE = randomBytes(8).toString("hex");
const placeholder = (i: number) => `medmmv-image-${PLACEHOLDER_NONCE}-${i}`;

/**
 * JSON of the objects a case sends again and again: the structured-output options (built
 * once per schema, a few kilobytes of JSON Schema) and the system message (one per prompt
 * library). Keyed by object identity, so a new object is simply serialised anew.
 */
const formatJson = new WeakMap<object, string>();
const messageJson = new WeakMap<object, string>();

function cachedJson(cache: WeakMap<object, string>, value: object, make: () => string): string {
  let json = cache.get(value);
  if (json === undefined) {
    json = make();
    cache.set(value, json);
  }
  return json;
}

/**
 * The request body as bytes: the same JSON as
 * `JSON.stringify({ model, temperature, stream: false, messages, ...format })`, byte for
 * byte (checked by test/llm/openai-chat.test.ts), built with less work. Image data URLs
 * are tens of kilobytes of base64 on every call that carries the images (rollouts, image
 * checks, repairs): JSON.stringify would scan each for characters to escape and
 * Buffer.from would encode it again, ≈ 0.13 ms of CPU per image per call on the benchmark
 * machine, so URLs marked JSON-safe by imagePart are serialised as placeholders and their
 * bytes spliced in. The format options and string-only messages are serialised once per
 * object (cachedJson).
 */
export function encodeRequest(req: ChatCompletionRequest): Buffer {
  const urls: string[] = [];
  const messages = req.messages.map((m) => {
    if (typeof m.content === "string") return cachedJson(messageJson, m, () => JSON.stringify(m));
    let parts: ContentPart[] | null = null;
    m.content.forEach((p, i) => {
      if (p.type !== "image_url" || !(p.image_url as { [JSON_SAFE_URL]?: boolean })[JSON_SAFE_URL]) return;
      parts ??= [...(m.content as ContentPart[])];
      parts[i] = { type: "image_url", image_url: { url: placeholder(urls.length) } };
      urls.push(p.image_url.url);
    });
    return JSON.stringify(parts ? { ...m, content: parts } : m);
  });
  // The options object's members, without its braces, after the messages.
  const format = cachedJson(formatJson, req.format, () => JSON.stringify(req.format).slice(1, -1));
  const json = `{"model":${JSON.stringify(req.model)},"temperature":${JSON.stringify(req.temperature)},"stream":false,"messages":[${messages.join(",")}]${format ? `,${format}` : ""}}`;
  if (urls.length === 0) return Buffer.from(json);
  const chunks: Buffer[] = [];
  let at = 0;
  urls.forEach((url, i) => {
    // The placeholder as a whole JSON string value: opening quote, text, closing quote.
    const token = `"${placeholder(i)}"`;
    const pos = json.indexOf(token, at);
    chunks.push(Buffer.from(json.slice(at, pos + 1)), Buffer.from(url, "latin1"));
    at = pos + token.length - 1;
  });
  chunks.push(Buffer.from(json.slice(at)));
  return Buffer.concat(chunks);
}

/**
 * The reply's JSON: the forced tool call's arguments, or the content (tolerating code
 * fences and prose around the object). Anything unparseable is undefined, which the
 * caller re-asks about; it is never a transport failure to retry.
 */
export function readReplyJson(message: NonNullable<NonNullable<WireReply["choices"]>[number]["message"]> | undefined): unknown {
  if (!message) return undefined;
  const args = message.tool_calls?.[0]?.function?.arguments;
  if (typeof args === "string") return parseJsonObject(args);
  if (args && typeof args === "object") return args;
  return typeof message.content === "string" ? parseJsonObject(message.content) : undefined;
}

function parseJsonObject(text: string): unknown {
  // The usual reply is the bare object: parse it without the regex and slicing below.
  const bare = text.trim();
  if (bare.startsWith("{") && bare.endsWith("}")) {
    try {
      return JSON.parse(bare);
    } catch {
      // fall through: prose or a fence around braces
    }
  }
  const fenced = /```(?:json)?\s*([\s\S]*?)```/.exec(text);
  const body = (fenced ? fenced[1]! : text).trim();
  const start = body.indexOf("{");
  const end = body.lastIndexOf("}");
  if (start < 0 || end <= start) return undefined;
  try {
    return JSON.parse(body.slice(start, end + 1));
  } catch {
    return undefined;
  }
}
