import { ChatVertexAI } from "@langchain/google-vertexai";
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { CallbackManagerForLLMRun } from "@langchain/core/callbacks/manager";
import type { BaseMessage } from "@langchain/core/messages";
import type { ChatResult } from "@langchain/core/outputs";
import { MedmmvError } from "../contracts/errors.js";
import { isRecord } from "../contracts/is-record.js";
import { statedWaitMs } from "./rate-limit-hints.js";

/**
 * Gemini and Claude on Google Cloud's Vertex AI through LangChain's own integration
 * (@langchain/google-vertexai ChatVertexAI, over google-auth-library), as a hospital runs it
 * under Google Cloud's BAA: `https://<location>-aiplatform.googleapis.com/v1/projects/<project>/
 * locations/<location>/publishers/google/models/<model>:generateContent` for Gemini,
 * `…/publishers/anthropic/models/<model>:rawPredict` for Claude (claude-sonnet-4-5@20250929: the
 * integration sends any `claude…` name there, with Anthropic's Messages body and
 * `anthropic_version: "vertex-2023-10-16"`), or the same paths on a Private Service Connect endpoint's host.
 *
 * Credentials are Application Default Credentials only — GOOGLE_APPLICATION_CREDENTIALS naming a
 * service-account key or a workload-identity-federation file (an AKS/EKS/on-premises OIDC token
 * exchanged at Google's STS), or the attached service account of GKE, Cloud Run or Compute
 * Engine — and medmmv holds no Google secret of its own. google-auth-library keeps the access
 * token (an hour's) and exchanges a new one before it expires; a token the server refuses
 * anyway (revoked, or a host clock that runs late) is exchanged once more and the request sent
 * again (`forceRefreshOnFailure`), so `serve` keeps working past the first hour.
 */
export interface VertexModelOptions {
  model: string;
  project: string;
  /** A Vertex AI location (`europe-west4`, `global`); null: the integration's default, us-central1. */
  location: string | null;
  /** The API's host (a Private Service Connect endpoint); null: the location's. */
  endpoint: string | null;
  temperature?: number;
  maxTokens?: number;
}

/** The scope Vertex AI's generateContent takes (Google's aiplatform REST reference). */
const CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform";

type AuthClient = ReturnType<ChatVertexAI["buildAbstractedClient"]>;

/**
 * One ADC client per project and credentials file for the process: each holds the access
 * token it exchanged, so the chat models of every role and temperature share one token (and
 * one exchange per hour) instead of one each.
 */
const authClients = new Map<string, AuthClient>();

/**
 * A refusal of Vertex AI's, in the shape the rest of core/llm reads a provider's (the OpenAI
 * SDK's APIError): `status`, the error object `error` (Google's `{ code, message, status,
 * details }`; Claude's own refusals pass through Vertex AI in Anthropic's shape, whose
 * `{ type, message }` is kept: "prompt is too long: M tokens > N maximum" reads as the context
 * window, `overloaded_error` 529 as transient, `billing_error` 402 as a quota; or the blocked
 * reply for a safety block) and `headers`, with the wait Google
 * states in a `google.rpc.RetryInfo` detail as `retry-after-ms` (retry.ts honours it).
 */
export class VertexRequestError extends Error {
  override readonly name = "VertexRequestError";
  constructor(
    readonly status: number,
    readonly error: unknown,
    readonly headers: Record<string, string>,
  ) {
    // Google's own words, for the operator's server log (provider-failure-log.ts removes every word of
    // the prompt from them). What reaches a case's owner is written by retry.ts and provider-errors.ts, never this.
    super(`Vertex AI: HTTP ${status}${isRecord(error) && typeof error.status === "string" ? ` ${error.status}` : isRecord(error) && typeof error.type === "string" ? ` ${error.type}` : ""}: ${googleMessage(error)}`);
  }
}

function googleMessage(error: unknown): string {
  if (typeof error === "string") return error.slice(0, 500);
  if (!isRecord(error)) return "";
  if (typeof error.message === "string") return error.message;
  const feedback = isRecord(error.promptFeedback) ? error.promptFeedback : null;
  if (typeof feedback?.blockReason === "string") return `prompt blocked: ${feedback.blockReason}`;
  const candidate = Array.isArray(error.candidates) && isRecord(error.candidates[0]) ? error.candidates[0] : null;
  return typeof candidate?.finishReason === "string" ? `reply blocked: ${candidate.finishReason}` : "";
}

/** Whether a failed reply came from the model's endpoint (Gemini's …:generateContent, Claude's …:rawPredict), not from the credentials' token exchange. */
function isModelCall(response: Record<string, unknown>): boolean {
  const url = typeof response.url === "string" ? response.url : "";
  if (!url) return true;
  try {
    return /:((stream)?generateContent|(stream)?rawPredict)$/i.test(new URL(url).pathname);
  } catch {
    return true;
  }
}

/** The error body as Google sent it: the integration hands it on as text (its JSON, or Google's front end's HTML). */
function parsedBody(data: unknown): unknown {
  if (typeof data !== "string") return data;
  try {
    return JSON.parse(data) as unknown;
  } catch {
    return data;
  }
}

function headersOf(response: unknown): Headers {
  const h = isRecord(response) ? response.headers : undefined;
  if (h instanceof Headers) return h;
  const out = new Headers();
  if (isRecord(h)) for (const [k, v] of Object.entries(h)) if (typeof v === "string") out.set(k, v);
  return out;
}

/**
 * A failure with nothing of the request left on it. The integration's errors carry the request
 * (gaxios' `config` with its body: the case's prompt; LangChain's `details`; the token
 * exchange's subject token), and an error travels on as the cause of ours, to wherever it is
 * logged. Kept: what the retry layer and provider-errors.ts read — the name, the message (a
 * network failure's names the host, never the case) and the system error code (ECONNREFUSED, a
 * certificate's).
 */
export class VertexTransportError extends Error {
  readonly code: string | undefined;
  constructor(from: Error) {
    super(from.message);
    this.name = from.name;
    const code = (from as { code?: unknown }).code;
    this.code = typeof code === "string" ? code : undefined;
  }
}

/**
 * The integration's failures as VertexRequestError: an HTTP refusal (`Google request failed
 * with status code N`, the gaxios response on `.response`), or a reply its safety handler
 * refused (GoogleAISafetyError: `promptFeedback.blockReason`, or a candidate finished for
 * SAFETY / BLOCKLIST / PROHIBITED_CONTENT / SPII / RECITATION); refused credentials as a
 * MedmmvError; anything else (a network failure, an abort) as a VertexTransportError. None
 * keeps the integration's error (and the request on it) as its cause.
 */
export function asVertexError(err: unknown): unknown {
  if (!(err instanceof Error) || err instanceof VertexRequestError || err instanceof MedmmvError || err instanceof VertexTransportError) return err;
  const response = (err as { response?: unknown }).response;
  if (!isRecord(response)) return new VertexTransportError(err);
  if (err.constructor.name === "GoogleAISafetyError" && isRecord(response.data)) return new VertexRequestError(200, response.data, {});
  if (typeof response.status !== "number" || response.status < 400) return new VertexTransportError(err);
  const body = parsedBody(response.data);
  if (!isModelCall(response)) {
    // The credentials' own exchange was refused (Google's STS or OAuth token endpoint, or the
    // impersonation call): no model call was made, and the fix is in the credentials, not the model.
    const reason = isRecord(body) && typeof body.error === "string" ? ` ${body.error}` : "";
    return new MedmmvError(
      "LLM_FATAL",
      `Vertex AI: the Application Default Credentials were refused when exchanged for an access token (HTTP ${response.status}${reason}); not retried. Check GOOGLE_APPLICATION_CREDENTIALS (its audience, token URL and subject token source) or the attached service account, and that it may use Vertex AI (roles/aiplatform.user)`,
      { retryable: false, details: { status: response.status, credentials: true } },
    );
  }
  const headers = headersOf(response);
  const kept: Record<string, string> = {};
  const retryAfter = headers.get("retry-after");
  if (retryAfter !== null) kept["retry-after"] = retryAfter;
  const waitMs = statedWaitMs(response.status, headers, body);
  if (waitMs !== null) kept["retry-after-ms"] = String(waitMs);
  const first = Array.isArray(body) ? body[0] : body;
  const error = isRecord(first) && isRecord(first.error) ? first.error : typeof body === "string" ? body : first;
  return new VertexRequestError(response.status, error, kept);
}

interface WireReply {
  status: number;
  data?: unknown;
  bodyUsed?: boolean;
  text?: () => Promise<string>;
}
type WireAdapter = (opts: { validateStatus?: (status: number) => boolean }, defaultAdapter: (opts: unknown) => Promise<WireReply>) => Promise<WireReply>;

/**
 * An error reply's body, read before google-auth-library's gaxios (8.3) hands the reply on. The
 * integration asks for a stream; gaxios drains an error reply's stream without node-fetch marking
 * the body used, and then drops what it read (`bodyUsed ? data : undefined`), so LangChain's error
 * says only "status code 400": Google's reason (the context window, RESOURCE_EXHAUSTED and its
 * retryDelay) was lost. Read here as text, the body is marked used and kept as the reply's data.
 */
const keepErrorBodies: WireAdapter = async (opts, defaultAdapter) => {
  const res = await defaultAdapter(opts);
  const ok = opts.validateStatus ? opts.validateStatus(res.status) : res.status >= 200 && res.status < 300;
  if (ok || res.bodyUsed || typeof res.text !== "function") return res;
  res.data = await res.text();
  return res;
};

/**
 * ChatVertexAI on Application Default Credentials alone. The integration takes an API key
 * first when one is in reach (GOOGLE_API_KEY, which google-genai:… models read) and then goes
 * to Vertex AI's express mode, not the project's endpoint in its location: a hospital's
 * project, region and BAA would be silently left, so no key is ever used here.
 */
class AdcChatVertexAI extends ChatVertexAI {
  override buildApiKey(): string | undefined {
    return undefined;
  }

  override buildAbstractedClient(fields: Parameters<ChatVertexAI["buildAbstractedClient"]>[0]): AuthClient {
    const project = fields?.authOptions?.projectId ?? "";
    const key = `${project}|${process.env.GOOGLE_APPLICATION_CREDENTIALS ?? ""}`;
    let client = authClients.get(key);
    if (!client) {
      client = super.buildAbstractedClient(fields);
      authClients.set(key, client);
    }
    return client;
  }

  /**
   * Claude's temperature 0 sent as 0. google-common's Anthropic body (utils/anthropic.js formatSettings)
   * copies the temperature only when truthy, so a deterministic call (temperature 0) would go without
   * one and run at Claude's default, 1.0 — the most random it takes.
   */
  override buildConnection(fields: Parameters<ChatVertexAI["buildConnection"]>[0], client: Parameters<ChatVertexAI["buildConnection"]>[1]): void {
    super.buildConnection(fields, client);
    const connection = (this as unknown as { connection: { modelFamily: string; formatData(input: unknown, parameters: { temperature?: number }): Promise<unknown> } }).connection;
    if (connection.modelFamily !== "claude") return;
    const format = connection.formatData.bind(connection);
    connection.formatData = async (input, parameters) => {
      const data = await format(input, parameters);
      if (parameters.temperature === 0 && isRecord(data)) data.temperature = 0;
      return data;
    };
  }

  override async _generate(messages: BaseMessage[], options: this["ParsedCallOptions"], runManager?: CallbackManagerForLLMRun): Promise<ChatResult> {
    let result: ChatResult;
    try {
      result = await super._generate(messages, options, runManager);
    } catch (err) {
      throw asVertexError(err);
    }
    // Claude's reply (google-common's Anthropic API) carries its usage in the generation's info only, not on the
    // message where LangChain's usage_metadata lives: without this the tokens Vertex AI billed would read as unknown.
    for (const g of result.generations) {
      const usage: unknown = g.generationInfo?.usage_metadata;
      const message = g.message as { usage_metadata?: unknown };
      if (isRecord(usage) && message.usage_metadata === undefined) message.usage_metadata = usage;
    }
    return result;
  }
}

/** The API host the integration takes: MEDMMV_VERTEX_ENDPOINT is one already; a role's own MEDMMV_<ROLE>_BASE_URL is an https URL. */
function endpointHost(endpoint: string | null): string | null {
  if (endpoint === null) return null;
  const host = endpoint.replace(/^https:\/\//i, "").replace(/\/+$/, "");
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(host) || host.includes("/"))
    throw new MedmmvError("CONFIG_INVALID", "invalid configuration: a google-vertexai: model's endpoint (MEDMMV_VERTEX_ENDPOINT, or the role's MEDMMV_<ROLE>_BASE_URL) must be an https host, without a path: Vertex AI is reached over https only");
  return host;
}

export function vertexChatModel(o: VertexModelOptions): BaseChatModel {
  const endpoint = endpointHost(o.endpoint);
  return new AdcChatVertexAI({
    model: o.model,
    ...(o.location ? { location: o.location } : {}),
    ...(endpoint ? { endpoint } : {}),
    ...(o.temperature !== undefined ? { temperature: o.temperature } : {}),
    ...(o.maxTokens !== undefined ? { maxOutputTokens: o.maxTokens } : {}),
    // Ours is the only retry layer (retry.ts); one request, one reply.
    maxRetries: 0,
    // The integration's own handler prints a failure without a status (an abort, a reset) with
    // console.error, request body and all: the case's notes in the process's output. Ours
    // hands it on untouched; the server log (with its redaction) is where failures are told.
    onFailedAttempt: (err: unknown) => {
      throw err;
    },
    streaming: false,
    authOptions: {
      projectId: o.project,
      scopes: [CLOUD_PLATFORM_SCOPE],
      clientOptions: { forceRefreshOnFailure: true, transporterOptions: { adapter: keepErrorBodies as never } },
    },
  });
}

/** Forgets the process's ADC clients (and their tokens): for a test that changes the credentials file between cases. */
export function forgetVertexCredentials(): void {
  authClients.clear();
}
