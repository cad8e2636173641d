/**
 * A scripted Vertex AI `generateContent` endpoint and the Security Token Service that issues
 * its access tokens, for the real `@langchain/google-vertexai` ChatVertexAI and the
 * google-auth-library under it (Application Default Credentials).
 *
 * generateContent: `POST /v1/projects/{project}/locations/{location}/publishers/google/models/{model}:generateContent`
 * (cloud.google.com/vertex-ai/generative-ai/docs/reference/rest/v1/projects.locations.publishers.models/generateContent).
 * The body is Gemini's, in camelCase JSON, as on the Gemini API (scripted-gemini-routes.ts: `contents`
 * with `parts`, `systemInstruction`, `generationConfig` with `responseSchema`, `tools` with
 * `functionDeclarations`). What Vertex AI adds that a client can get wrong:
 * - an OAuth 2 access token, `Authorization: Bearer …`, never an API key. A request without one is
 *   answered 401 UNAUTHENTICATED "Request is missing required authentication credential"; with an
 *   unknown or expired one 401 UNAUTHENTICATED "Request had invalid authentication credentials.
 *   Expected OAuth 2 access token…" (GoogleCloudPlatform/generative-ai#454, googleapis/java-aiplatform#1056),
 *   with `WWW-Authenticate: Bearer … error="invalid_token"` (RFC 6750 §3).
 * - replies with `usageMetadata { promptTokenCount, candidatesTokenCount, totalTokenCount, trafficType }`,
 *   `modelVersion`, `createTime`, `responseId`; a prompt its safety filters block comes back 200 with
 *   `promptFeedback { blockReason, safetyRatings[].blocked }` and no candidates
 *   (cloud.google.com/vertex-ai/generative-ai/docs/multimodal/process-blocked-responses).
 * - errors `{ error: { code, message, status } }`: 429 RESOURCE_EXHAUSTED "Resource exhausted. Please
 *   try again later. Please refer to https://cloud.google.com/vertex-ai/generative-ai/docs/error-code-429
 *   for more details." (google-gemini/gemini-cli#14811, #12750), 400 INVALID_ARGUMENT "The input token
 *   count (M) exceeds the maximum number of tokens allowed (N)." (googleapis/python-genai#2050). A
 *   scripted fault may carry such a body in Google's own shape (with a google.rpc.RetryInfo detail):
 *   it is sent as it is.
 *
 * Claude on Vertex AI: `POST /v1/projects/{project}/locations/{location}/publishers/anthropic/models/{model}:rawPredict`
 * (cloud.google.com/vertex-ai/generative-ai/docs/partner-models/claude/use-claude; docs.anthropic.com
 * "Claude on Vertex AI"), the model named with its `@` version (claude-sonnet-4-5@20250929). The body
 * is Anthropic's Messages API body (anthropic-messages-wire.ts) with two differences: `model` is not
 * in it (the URL names it) and `anthropic_version: "vertex-2023-10-16"` is (not a header). The same
 * access token as generateContent, refused the same way by Google's front (Google's error shape). Past
 * it, the model's own refusals pass through in Anthropic's shape with a `req_vrtx_…` request_id in the
 * body: 400 `{"type":"error","error":{"type":"invalid_request_error","message":"output_config: Extra
 * inputs are not permitted"},"request_id":"req_vrtx_…"}` (OpenHands/software-agent-sdk#1630,
 * anthropics/anthropic-sdk-python#1199, BerriAI/litellm#15299), so a body carrying `model` is refused
 * "model: Extra inputs are not permitted" and one without `anthropic_version` "anthropic_version: Field
 * required" (clawvisor/clawvisor#156 reports the API's "2023-06-01" refused too; its status there was
 * 404, here 400, as the brief and the docs' "must be set" read). Google's own refusals stay Google's:
 * 429 RESOURCE_EXHAUSTED "Quota exceeded for aiplatform.googleapis.com/online_prediction_requests_per_base_model
 * with base model: anthropic-claude-…" (cline/cline#651, anthropics/claude-code#1440), 404 NOT_FOUND
 * "Publisher Model `…` was not found or your project does not have access to it" (cline/cline#8697).
 * A reply is Anthropic's `message`, `id` `msg_vrtx_…` and `model` the Anthropic name
 * (claude-haiku-4-5-20251001 for claude-haiku-4-5@20251001: diegosouzapw/OmniRoute#8909's live
 * capture), usage split by the prompt cache as on Anthropic's API.
 *
 * Token exchange: `POST /v1/token`, as sts.googleapis.com/v1/token answers an `external_account`
 * (workload identity federation) credential: a form-encoded RFC 8693 request (`grant_type`
 * urn:ietf:params:oauth:grant-type:token-exchange, `subject_token`, `subject_token_type`,
 * `audience`, `scope`, `requested_token_type`) answered `{ access_token, issued_token_type,
 * token_type: "Bearer", expires_in }` (the STS v1 ExchangeTokenResponse), or 400 `{ error:
 * "invalid_request" | "invalid_grant", error_description }` (RFC 6749 §5.2). A token stays valid
 * until the test says it expired (`expireTokens`), as Google's does once its hour is up: no clock.
 *
 * The answer comes from the scenario (vendor-relay.ts).
 */
import type http from "node:http";
import { isRecord } from "../core/contracts/is-record.js";
import { readBody } from "./faults.js";
import { estimateTokens } from "./scripted-wire.js";
import { generateContentReply, geminiStatus, invalid, structuredMode, toChatRequest, type GeminiCallLog } from "./scripted-gemini-routes.js";
import { AnthropicPromptCache } from "./anthropic-prompt-cache.js";
import { anthropicErrorBody, isAnthropicError, messagesContent, messagesRuleBroken, messagesToolMode, toChatRequest as messagesToChatRequest } from "./anthropic-messages-wire.js";
import { agentOf, countImages, relayForChoice, readJsonBody, writeJson, type ProviderErrors } from "./vendor-relay.js";

export const VERTEX_GENERATE_PATH = /^\/v1\/projects\/([^/]+)\/locations\/([^/]+)\/publishers\/google\/models\/([^/:]+):generateContent$/;
export const VERTEX_RAW_PREDICT_PATH = /^\/v1\/projects\/([^/]+)\/locations\/([^/]+)\/publishers\/anthropic\/models\/([^/:]+):rawPredict$/;
/** The one `anthropic_version` Claude on Vertex AI takes, in the body (docs.anthropic.com "Claude on Vertex AI"). */
export const VERTEX_ANTHROPIC_VERSION = "vertex-2023-10-16";
export const VERTEX_TOKEN_PATH = "/v1/token";

const TOKEN_EXCHANGE_GRANT = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token";

export interface VertexCallLog {
  /** Gemini's generateContent (google) or Claude's rawPredict (anthropic). */
  publisher: "google" | "anthropic";
  agent: string;
  project: string;
  location: string;
  model: string;
  status: number;
  /** The bearer token the request carried (null: none). */
  token: string | null;
  /** Whether that token was one this server issued and had not expired when the request came. */
  tokenValid: boolean;
  /** How JSON was asked for: Gemini's function call or response schema; Claude's forced tool (or tools it may call). */
  structured: GeminiCallLog["structured"] | "forcedTool" | "tools";
  images: number;
  temperature: number | null;
  /** Claude's calls: the body's `anthropic_version` (null: none), and whether the body named the model. */
  anthropicVersion?: string | null;
  modelInBody?: boolean;
}

export interface TokenExchangeLog {
  status: number;
  subjectToken: string | null;
  subjectTokenType: string | null;
  audience: string | null;
  scope: string | null;
  /** The access token issued (null: the exchange was refused). */
  issued: string | null;
}

function sendError(res: http.ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  writeJson(res, status, { error: { code: status, message, status: geminiStatus(status) } }, headers);
}

const VERTEX_ERRORS: ProviderErrors = {
  isOwn: (json) => (isRecord(json) && isRecord(json.error) && typeof json.error.status === "string") || (Array.isArray(json) && isRecord(json[0]) && isRecord(json[0].error)),
  send: (res, status, message, headers) =>
    // Vertex AI's own wording of a rate limit, whatever the scripted route said.
    sendError(res, status, status === 429 ? "Resource exhausted. Please try again later. Please refer to https://cloud.google.com/vertex-ai/generative-ai/docs/error-code-429 for more details." : message, headers),
};

let claudeRequests = 0;

/** Claude's refusals on Vertex AI: Google's front's for a quota, the token and a model not found; past it, the model's own in Anthropic's shape. */
function sendClaudeError(res: http.ServerResponse, status: number, message: string, headers: Record<string, string> = {}, model = "claude"): void {
  if (status === 429) {
    const base = `anthropic-${model.replace(/@.*$/, "")}`;
    return sendError(res, 429, `Quota exceeded for aiplatform.googleapis.com/online_prediction_requests_per_base_model with base model: ${base}. Please submit a quota increase request. https://cloud.google.com/vertex-ai/docs/generative-ai/quotas-genai.`, headers);
  }
  if (status === 401 || status === 403 || status === 404) return sendError(res, status, message, headers);
  writeJson(res, status, anthropicErrorBody(status, message, `req_vrtx_scripted_${++claudeRequests}`), headers);
}

function claudeErrors(model: string): ProviderErrors {
  return {
    // A scripted fault written in either shape Vertex AI answers Claude's calls with is sent as it is.
    isOwn: (json) => isAnthropicError(json) || VERTEX_ERRORS.isOwn(json),
    send: (res, status, message, headers) => sendClaudeError(res, status, message, headers, model),
  };
}

/** What a rawPredict body breaks: the two documented differences from the Messages API, then its rules. */
function rawPredictRuleBroken(body: Record<string, unknown>): string | null {
  if ("model" in body) return "model: Extra inputs are not permitted";
  if (body.anthropic_version === undefined) return "anthropic_version: Field required";
  if (body.anthropic_version !== VERTEX_ANTHROPIC_VERSION) return `anthropic_version: Input should be '${VERTEX_ANTHROPIC_VERSION}'`;
  return messagesRuleBroken(body);
}

function bearerOf(req: http.IncomingMessage): string | null {
  const auth = req.headers.authorization;
  const m = typeof auth === "string" ? /^Bearer (\S+)$/i.exec(auth) : null;
  return m ? m[1]! : null;
}

export class ScriptedVertexRoutes {
  private log: VertexCallLog[] = [];
  private exchanges: TokenExchangeLog[] = [];
  /** Issued tokens and whether each still holds. */
  private tokens = new Map<string, { expired: boolean }>();
  /** The `expires_in` each exchange states (seconds); Google's access tokens last an hour. */
  tokenLifetimeSec = 3599;
  /**
   * When set, every exchange is refused 400 `invalid_grant` with this description, as Google's STS
   * refuses a subject token its workload identity provider does not accept (a wrong audience, an
   * expired OIDC token).
   */
  refuseExchanges: string | null = null;
  /** When set, the safety filters block every prompt in this category (a 200 with promptFeedback). */
  blockPrompts: string | null = null;

  /** Claude on Vertex AI caches prompt prefixes as Anthropic's API does (cache_control breakpoints). */
  readonly claudeCache = new AnthropicPromptCache();

  constructor(private readonly chatUrl: () => string) {}

  calls(): VertexCallLog[] {
    return this.log.map((e) => ({ ...e }));
  }

  tokenExchanges(): TokenExchangeLog[] {
    return this.exchanges.map((e) => ({ ...e }));
  }

  /** Every token issued so far expires now (the hour is up), as the server sees it. */
  expireTokens(): void {
    for (const t of this.tokens.values()) t.expired = true;
  }

  reset(): void {
    this.log = [];
    this.exchanges = [];
    this.tokens = new Map();
    this.tokenLifetimeSec = 3599;
    this.blockPrompts = null;
    this.refuseExchanges = null;
    this.claudeCache.reset();
  }

  async handleToken(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const read = await readBody(req, 64 * 1024);
    if (!read.ok || read.body === undefined) return;
    const form = new URLSearchParams(read.body.toString("utf8"));
    const entry: TokenExchangeLog = {
      status: 400,
      subjectToken: form.get("subject_token"),
      subjectTokenType: form.get("subject_token_type"),
      audience: form.get("audience"),
      scope: form.get("scope"),
      issued: null,
    };
    this.exchanges.push(entry);
    const refuse = (error: string, description: string) => writeJson(res, 400, { error, error_description: description });
    if (req.method !== "POST") return refuse("invalid_request", "The token exchange takes POST only.");
    if (form.get("grant_type") !== TOKEN_EXCHANGE_GRANT) return refuse("unsupported_grant_type", `Invalid value for "grant_type".`);
    if (!entry.subjectToken) return refuse("invalid_request", `Missing required parameter: "subject_token".`);
    if (!entry.subjectTokenType) return refuse("invalid_request", `Missing required parameter: "subject_token_type".`);
    if (!entry.audience) return refuse("invalid_request", `Missing required parameter: "audience".`);
    if (form.get("requested_token_type") !== ACCESS_TOKEN_TYPE) return refuse("invalid_request", `Invalid value for "requested_token_type".`);
    if (this.refuseExchanges !== null) return refuse("invalid_grant", this.refuseExchanges);
    const token = `ya29.scripted-${this.tokens.size + 1}`;
    this.tokens.set(token, { expired: false });
    entry.status = 200;
    entry.issued = token;
    writeJson(res, 200, { access_token: token, issued_token_type: ACCESS_TOKEN_TYPE, token_type: "Bearer", expires_in: this.tokenLifetimeSec });
  }

  /** The request's bearer token, and whether it is one this server issued that has not expired. */
  private bearer(req: http.IncomingMessage): { token: string | null; tokenValid: boolean } {
    const token = bearerOf(req);
    const held = token === null ? undefined : this.tokens.get(token);
    return { token, tokenValid: held !== undefined && !held.expired };
  }

  /** One request in the call log: where it went and with which token, and what its chat-completions form asked (agent, images). */
  private record(
    where: Pick<VertexCallLog, "publisher" | "project" | "location" | "model" | "status" | "token" | "tokenValid">,
    chat: Record<string, unknown> | null,
    asked: Pick<VertexCallLog, "structured" | "temperature" | "anthropicVersion" | "modelInBody">,
  ): VertexCallLog {
    const messages = chat ? (chat.messages as Array<Record<string, unknown>>) : null;
    const entry: VertexCallLog = { ...where, agent: messages ? agentOf(messages) : "unknown", images: messages ? countImages(messages) : 0, ...asked };
    this.log.push(entry);
    return entry;
  }

  /** Google's front refuses a request without a valid access token before any model sees it (true: refused, answered). */
  private refusedToken(res: http.ServerResponse, token: string | null, tokenValid: boolean): boolean {
    const unauthenticated = { "www-authenticate": `Bearer realm="https://accounts.google.com/", error="invalid_token"` };
    if (token === null) {
      sendError(res, 401, "Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.", unauthenticated);
      return true;
    }
    if (!tokenValid) {
      sendError(res, 401, "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.", unauthenticated);
      return true;
    }
    return false;
  }

  /** Claude on Vertex AI: `…/publishers/anthropic/models/{model}:rawPredict` (this file's header). */
  async handleRawPredict(req: http.IncomingMessage, res: http.ServerResponse, project: string, location: string, model: string): Promise<void> {
    if (req.method !== "POST") {
      req.resume();
      sendError(res, 405, `method ${req.method ?? ""} not allowed`);
      return;
    }
    const { token, tokenValid } = this.bearer(req);
    const read = await readJsonBody(req);
    if (read === null) return;
    const body = read.ok && isRecord(read.body) ? read.body : undefined;
    const problem = body ? rawPredictRuleBroken(body) : null;
    const logged = (status: number): VertexCallLog =>
      this.record({ publisher: "anthropic", project, location, model, status, token, tokenValid }, body && problem === null ? messagesToChatRequest(model, body) : null, {
        structured: body ? messagesToolMode(body) : "none",
        temperature: body && typeof body.temperature === "number" ? body.temperature : null,
        anthropicVersion: body && typeof body.anthropic_version === "string" ? body.anthropic_version : null,
        modelInBody: body ? "model" in body : false,
      });
    if (this.refusedToken(res, token, tokenValid)) {
      logged(401);
      return;
    }
    if (!read.ok) return sendClaudeError(res, read.status, read.message);
    if (!body) return sendClaudeError(res, 400, "request body must be a JSON object");
    if (problem) {
      logged(400);
      return sendClaudeError(res, 400, problem);
    }
    const entry = logged(0);
    const { status, choice } = await relayForChoice(this.chatUrl(), messagesToChatRequest(model, body), res, claudeErrors(model));
    entry.status = status;
    if (!choice) return;
    const { content, stopReason, text } = messagesContent(choice, `toolu_vrtx_scripted_${++claudeRequests}`);
    const usage = this.claudeCache.use(model, body);
    const outputTokens = typeof choice.usage.completion_tokens === "number" ? choice.usage.completion_tokens : estimateTokens(text.length);
    writeJson(res, 200, {
      // The Anthropic model name, as Vertex AI's replies carry it (claude-sonnet-4-5-20250929 for claude-sonnet-4-5@20250929).
      model: model.replace("@", "-"),
      id: `msg_vrtx_scripted_${claudeRequests}`,
      type: "message",
      role: "assistant",
      content,
      stop_reason: stopReason,
      stop_sequence: null,
      usage: { input_tokens: usage.inputTokens, output_tokens: outputTokens, cache_creation_input_tokens: usage.cacheCreationTokens, cache_read_input_tokens: usage.cacheReadTokens },
    });
  }

  async handle(req: http.IncomingMessage, res: http.ServerResponse, project: string, location: string, model: string): Promise<void> {
    if (req.method !== "POST") {
      req.resume();
      sendError(res, 405, `method ${req.method ?? ""} not allowed`);
      return;
    }
    const { token, tokenValid } = this.bearer(req);
    const read = await readJsonBody(req);
    if (read === null) return;
    const logged = (status: number, body?: Record<string, unknown>): VertexCallLog => {
      const chat = body ? toChatRequest(model, body) : null;
      return this.record({ publisher: "google", project, location, model, status, token, tokenValid }, chat, { structured: body ? structuredMode(body) : "none", temperature: chat && typeof chat.temperature === "number" ? chat.temperature : null });
    };
    const parsed = read.ok && isRecord(read.body) && invalid(read.body) === null ? read.body : undefined;
    if (this.refusedToken(res, token, tokenValid)) {
      logged(401, parsed);
      return;
    }
    if (!read.ok) return sendError(res, read.status, read.message);
    if (!isRecord(read.body)) return sendError(res, 400, "Invalid JSON payload received.");
    const body = read.body;
    const problem = invalid(body);
    if (problem) {
      logged(400);
      return sendError(res, 400, problem);
    }
    if (this.blockPrompts) {
      logged(200, body);
      return writeJson(res, 200, {
        promptFeedback: { blockReason: "SAFETY", safetyRatings: [{ category: this.blockPrompts, probability: "HIGH", severity: "HARM_SEVERITY_HIGH", blocked: true }] },
        usageMetadata: { promptTokenCount: 0, totalTokenCount: 0, trafficType: "ON_DEMAND" },
        modelVersion: model,
        createTime: new Date().toISOString(),
        responseId: `scripted-vertex-${this.log.length}`,
      });
    }
    const entry = logged(0, body);
    const { status, choice } = await relayForChoice(this.chatUrl(), toChatRequest(model, body), res, VERTEX_ERRORS);
    entry.status = status;
    if (!choice) return;
    const { parts, finishReason, promptTokens, candidatesTokens } = generateContentReply(choice);
    writeJson(res, 200, {
      candidates: [{ content: { role: "model", parts }, finishReason, avgLogprobs: -0.1 }],
      usageMetadata: {
        promptTokenCount: promptTokens,
        candidatesTokenCount: candidatesTokens,
        totalTokenCount: promptTokens + candidatesTokens,
        trafficType: "ON_DEMAND",
        promptTokensDetails: [{ modality: "TEXT", tokenCount: promptTokens }],
        candidatesTokensDetails: [{ modality: "TEXT", tokenCount: candidatesTokens }],
      },
      modelVersion: model,
      createTime: new Date().toISOString(),
      responseId: `scripted-vertex-${this.log.length}`,
    });
  }
}
