/**
 * A scripted OpenAI-compatible chat-completions server on 127.0.0.1 (random port).
 *
 * Tests and `medmmv demo` point the real client at it: each request is routed to a
 * script by the `medmmv-agent: <name>` marker in its prompt, and the reply takes the
 * shape the client asked for (json_schema / json_object content, or a tool call), so
 * the product's structured-output path is exercised over real HTTP. Faults from
 * ./faults.ts reproduce what real endpoints do wrong.
 */
import type http from "node:http";

import {
  FaultPlan,
  HttpHarness,
  MALFORMED_JSON_TEXT,
  nowMs,
  composeReply,
  keepsScriptedReply,
  readBody,
  respond,
  truncateJson,
  writeJson,
  type Fault,
  type FaultKind,
  type HeldRelease,
  type TrackedCall,
} from "./faults.js";
import { SimulatedPromptCache, type PromptCacheOptions } from "./prompt-cache.js";
import { PROSE_REPLY, azureFilterResult, isThrottle, judgeRequest, type ProviderOptions, type ProviderProfile } from "./provider-profiles.js";
import { ScriptedVendorRoutes } from "./scripted-vendor-routes.js";
import { isRecord } from "../core/contracts/is-record.js";
import { AGENT_MARKER, estimateTokens } from "./scripted-wire.js";

export type { Fault, FaultKind } from "./faults.js";
export { PROVIDER_PROFILES, type ProviderOptions, type ProviderProfile } from "./provider-profiles.js";

/** Exact bytes to send instead of a chat completion (for tests of garbage output). */
export interface RawReply {
  __raw: true;
  status?: number;
  headers?: Record<string, string>;
  body: string;
}

export function rawReply(body: string, opts: { status?: number; headers?: Record<string, string> } = {}): RawReply {
  return { __raw: true, body, ...opts };
}

export interface ScriptedRequest {
  agent: string;
  /** 0-based index of this call among calls to the same agent (faulted calls count too). */
  callIndex: number;
  globalIndex: number;
  body: Record<string, unknown>;
  messages: unknown[];
  /** All text parts of all messages, joined with "\n". */
  text: string;
  /** URLs (usually data: URLs) of every image_url part. */
  images: string[];
  temperature: number | null;
  model: string;
  /** How the reply will be shaped: message content, or a call to `toolName`. */
  mode: "content" | "tool";
  toolName: string | null;
  /** Aborts when the client disconnects or the server closes. */
  signal: AbortSignal;
}

export type ScriptFn = (req: ScriptedRequest) => unknown;

/**
 * A fixed value (sent as JSON; a string is sent as-is), an array whose element
 * `callIndex % length` is used (elements may themselves be functions), or a function.
 * To answer with a JSON array, wrap it: `[[1, 2]]`.
 */
export type AgentScript = ScriptFn | readonly unknown[] | RawReply | object | string | number | boolean | null;

export interface Scenario {
  name?: string;
  agents: Record<string, AgentScript>;
  fallback?: AgentScript;
}

export interface ScriptedCallLog {
  agent: string;
  callIndex: number;
  globalIndex: number;
  /** Epoch ms when the request body was fully read. */
  start: number;
  /** Epoch ms when the reply ended or the client left; null while in flight. */
  end: number | null;
  /** HTTP status sent; 0 when nothing was sent (hang, reset, client gone). */
  status: number;
  temperature: number | null;
  model: string;
  promptChars: number;
  images: number;
  mode: "content" | "tool";
  fault: FaultKind | null;
  disconnected: boolean;
  /** Tokens the reply's usage block reported (0 when no completion was sent). */
  promptTokens: number;
  completionTokens: number;
  /** Prompt tokens the simulated prompt cache served (0 with the cache off). */
  cachedTokens: number;
  /** Request path and query (Azure requests: /openai/deployments/<name>/chat/completions?api-version=…). */
  url: string;
  authorization: string | null;
  /** Azure's key header. */
  apiKey: string | null;
  /** The provider profile's rules this request broke (provider-profiles.ts). */
  rulesBroken: string[];
}

export interface ScriptedOpenAIStats {
  total: number;
  byAgent: Record<string, number>;
  inFlight: number;
  /** Calls a "hold" fault is holding now, waiting for releaseHeld. */
  held: number;
  peakInFlight: number;
  peakInFlightByAgent: Record<string, number>;
  disconnects: number;
  /** Requests refused before routing (bad JSON, no messages, stream: true). */
  rejected: number;
  faultsInjected: Record<FaultKind, number>;
  log: ScriptedCallLog[];
  /** The provider profile's rules: which a reply has revealed, and requests that broke one after it was revealed. */
  rules: { profile: ProviderProfile; revealed: string[]; brokenAfterReveal: Array<{ globalIndex: number; agent: string; rule: string }> };
}

export interface ScriptedOpenAIOptions {
  scenario: Scenario;
  latencyMs?: number;
  /** Seed of the PRNG behind probabilistic faults (default 1). */
  seed?: number;
  /** Model names listed by GET /v1/models besides those seen in requests. */
  models?: string[];
  host?: string;
  /**
   * Simulate a provider's prompt cache and report `usage.prompt_tokens_details.cached_tokens`
   * as OpenAI does (prompt-cache.ts). Off by default: then the usage block has no details.
   */
  promptCache?: PromptCacheOptions | boolean;
  /**
   * State image tokens as providers that do report them (usage.prompt_tokens_details.image_tokens,
   * counted in prompt_tokens): 85 an image at detail "low", 765 otherwise (OpenAI's rate for a
   * low-resolution image and for a 512 × 512 one at high detail). Off by default.
   */
  statesImageTokens?: boolean;
  /** Play a provider's documented rules (provider-profiles.ts); default "openai" (none). */
  provider?: ProviderProfile;
  providerOptions?: ProviderOptions;
}

/** The image tokens the scripted server states for one image (see statesImageTokens). */
export function scriptedImageTokens(detail: string | null): number {
  return detail === "low" ? 85 : 765;
}

export interface ScriptedOpenAI {
  /** e.g. http://127.0.0.1:41234/v1 */
  baseUrl: string;
  close(): Promise<void>;
  setScenario(scenario: Scenario): void;
  setLatency(ms: number): void;
  /** Turn the simulated prompt cache on (empty) or off. */
  setPromptCache(opts: PromptCacheOptions | boolean): void;
  /** State image tokens in the usage block, or stop (see ScriptedOpenAIOptions.statesImageTokens). */
  setStatesImageTokens(on: boolean): void;
  /** Play another provider from now on (what was revealed is forgotten). */
  setProvider(profile: ProviderProfile, options?: ProviderOptions): void;
  addFault(fault: Fault): void;
  clearFaults(): void;
  /** Let calls held by a "hold" fault go: answered as scripted, or dropped; how many there were. */
  releaseHeld(how?: HeldRelease): number;
  stats(): ScriptedOpenAIStats;
  /** Zero counters, per-agent call indices, the log, the prompt cache and the fault PRNG (faults stay). */
  reset(): void;
  /** Anthropic's Messages API and Gemini's generateContent on the same server (scripted-vendor-routes.ts). */
  vendors: ScriptedVendorRoutes;
}

const MAX_BODY_BYTES = 64 * 1024 * 1024;

export function isRawReply(v: unknown): v is RawReply {
  return isRecord(v) && v.__raw === true && typeof v.body === "string";
}

function openAIError(message: string, type: string, code: string | null): { error: Record<string, unknown> } {
  return { error: { message, type, param: null, code } };
}

function errorTypeFor(status: number): { type: string; code: string | null } {
  if (status === 429) return { type: "requests", code: "rate_limit_exceeded" };
  if (status === 401) return { type: "invalid_request_error", code: "invalid_api_key" };
  if (status === 404) return { type: "invalid_request_error", code: "not_found" };
  if (status >= 500) return { type: "server_error", code: null };
  return { type: "invalid_request_error", code: null };
}

interface ParsedMessages {
  text: string;
  /** Image parts per message, in order. */
  imagesPerMessage: number[];
  images: string[];
  /** The `detail` of each image part (null: not given). */
  imageDetails: Array<string | null>;
  agent: string;
}

function parseMessages(messages: unknown[]): ParsedMessages {
  const texts: string[] = [];
  const images: string[] = [];
  const imageDetails: Array<string | null> = [];
  // System messages are searched first: that is where prompts put the marker, and a
  // user message quoting another prompt must not re-route the call.
  const systemTexts: string[] = [];
  const imagesPerMessage: number[] = [];
  for (const m of messages) {
    if (!isRecord(m)) continue;
    const own: string[] = [];
    const before = images.length;
    const content = m.content;
    if (typeof content === "string") {
      own.push(content);
    } else if (Array.isArray(content)) {
      for (const part of content) {
        if (!isRecord(part)) continue;
        if (part.type === "text" && typeof part.text === "string") own.push(part.text);
        if (part.type === "image_url") {
          const iu = part.image_url;
          const url = typeof iu === "string" ? iu : isRecord(iu) && typeof iu.url === "string" ? iu.url : null;
          if (url !== null) {
            images.push(url);
            imageDetails.push(isRecord(iu) && typeof iu.detail === "string" ? iu.detail : null);
          }
        }
      }
    }
    texts.push(...own);
    imagesPerMessage.push(images.length - before);
    if (m.role === "system" || m.role === "developer") systemTexts.push(...own);
  }
  const text = texts.join("\n");
  const found = AGENT_MARKER.exec(systemTexts.join("\n")) ?? AGENT_MARKER.exec(text);
  return { text, images, imageDetails, imagesPerMessage, agent: found?.[1] ?? "unknown" };
}

function chosenTool(body: Record<string, unknown>): { mode: "content" | "tool"; toolName: string | null } {
  const rf = isRecord(body.response_format) ? body.response_format.type : undefined;
  const tools = Array.isArray(body.tools) ? body.tools : [];
  if (rf === "json_schema" || rf === "json_object" || tools.length === 0 || body.tool_choice === "none") {
    return { mode: "content", toolName: null };
  }
  const tc = body.tool_choice;
  if (isRecord(tc) && isRecord(tc.function) && typeof tc.function.name === "string") {
    return { mode: "tool", toolName: tc.function.name };
  }
  const first: unknown = tools[0];
  const name = isRecord(first) && isRecord(first.function) && typeof first.function.name === "string" ? first.function.name : "tool";
  return { mode: "tool", toolName: name };
}

function serialize(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value);
}

class ScriptError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code: string,
  ) {
    super(message);
  }
}

async function runScript(script: AgentScript | undefined, req: ScriptedRequest): Promise<unknown> {
  if (script === undefined) {
    throw new ScriptError(`scripted server has no script for agent "${req.agent}" and no fallback`, 400, "no_script");
  }
  let step: unknown = script;
  if (Array.isArray(step)) {
    if (step.length === 0) throw new ScriptError(`script for agent "${req.agent}" is an empty array`, 400, "no_script");
    step = step[req.callIndex % step.length];
  }
  const value = typeof step === "function" ? await (step as ScriptFn)(req) : step;
  if (value === undefined) throw new ScriptError(`script for agent "${req.agent}" returned undefined`, 500, "script_error");
  return value;
}

export async function startScriptedOpenAI(opts: ScriptedOpenAIOptions): Promise<ScriptedOpenAI> {
  let scenario = opts.scenario;
  let latencyMs = opts.latencyMs ?? 0;
  const faults = new FaultPlan(opts.seed ?? 1);
  const configuredModels = new Set(opts.models ?? []);
  const seenModels = new Set<string>();
  let total = 0;
  let rejected = 0;
  let byAgent = new Map<string, number>();
  let log: ScriptedCallLog[] = [];
  const cacheFrom = (o: PromptCacheOptions | boolean | undefined) => (o ? new SimulatedPromptCache(o === true ? {} : o) : null);
  let promptCache = cacheFrom(opts.promptCache);
  let statesImageTokens = opts.statesImageTokens === true;
  let provider: ProviderProfile = opts.provider ?? "openai";
  let providerOptions: ProviderOptions = opts.providerOptions ?? {};
  let revealed = new Set<string>();
  /** Requests the provider's rate limit (or an upstream error) refused so far (ProviderOptions.throttle). */
  let throttled = 0;
  let brokenAfterReveal: Array<{ globalIndex: number; agent: string; rule: string }> = [];

  const reject = (res: http.ServerResponse, status: number, message: string, code: string | null = null): void => {
    writeJson(res, status, openAIError(message, errorTypeFor(status).type, code));
  };

  const handleCompletion = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const read = await readBody(req, MAX_BODY_BYTES);
    if (!read.ok || read.body === undefined) {
      if (read.tooLarge) {
        rejected++;
        reject(res, 413, "request body too large for the scripted server");
      }
      return;
    }
    let body: unknown;
    try {
      body = JSON.parse(read.body.toString("utf8"));
    } catch {
      rejected++;
      reject(res, 400, "request body is not valid JSON", "invalid_json");
      return;
    }
    if (!isRecord(body) || !Array.isArray(body.messages) || body.messages.length === 0) {
      rejected++;
      reject(res, 400, "'messages' must be a non-empty array", "invalid_messages");
      return;
    }
    if (body.stream === true) {
      rejected++;
      reject(res, 400, "streaming is not supported by the scripted server; send stream: false", "stream_unsupported");
      return;
    }

    const parsed = parseMessages(body.messages);
    const agent = parsed.agent;
    const callIndex = byAgent.get(agent) ?? 0;
    byAgent.set(agent, callIndex + 1);
    const globalIndex = total++;
    const model = typeof body.model === "string" ? body.model : "";
    if (model !== "") seenModels.add(model);
    const temperature = typeof body.temperature === "number" ? body.temperature : null;
    const { mode, toolName } = chosenTool(body);

    const entry: ScriptedCallLog = {
      agent,
      callIndex,
      globalIndex,
      start: nowMs(),
      end: null,
      status: 0,
      temperature,
      model,
      promptChars: parsed.text.length,
      images: parsed.images.length,
      mode,
      fault: null,
      disconnected: false,
      promptTokens: 0,
      completionTokens: 0,
      cachedTokens: 0,
      url: req.url ?? "",
      authorization: typeof req.headers.authorization === "string" ? req.headers.authorization : null,
      apiKey: typeof req.headers["api-key"] === "string" ? req.headers["api-key"] : null,
      rulesBroken: [],
    };
    log.push(entry);
    const call: TrackedCall = harness.begin(res, agent, (c) => {
      entry.end = nowMs();
      entry.disconnected = c.disconnected;
    });
    const send = (status: number, payload: string, headers: Record<string, string> = {}): void => {
      if (call.signal.aborted) return;
      entry.status = status;
      respond(call, res, status, payload, headers);
    };

    // The provider's rules first: a request it refuses never reaches the script.
    const verdict = judgeRequest(provider, providerOptions, { body, text: parsed.text, imagesPerMessage: parsed.imagesPerMessage, promptTokens: estimateTokens(parsed.text.length), throttled });
    entry.rulesBroken = verdict.breaks;
    // A content-free probe (`models check`, and the client's check that a prose reply was the
    // server's rule and not the case's content: format-probe.ts) asks about a rule on purpose.
    const probe = agent === "models-check";
    for (const rule of verdict.breaks) if (revealed.has(rule) && !probe) brokenAfterReveal.push({ globalIndex, agent, rule });
    if (verdict.refusal) {
      await harness.sleep(latencyMs, call, entry.start);
      if (call.signal.aborted) return;
      const { status, body: refusal, headers, reveals } = verdict.refusal;
      // A string body goes as plain text (TGI's JSON extractor answers so).
      if (typeof refusal === "string") send(status, refusal, { "content-type": "text/plain; charset=utf-8", ...headers });
      else send(status, JSON.stringify(refusal), headers);
      if (isThrottle(reveals)) throttled++;
      else revealed.add(reveals);
      return;
    }

    const fault = faults.pick({ agent, callIndex, globalIndex, text: parsed.text });
    if (fault) {
      harness.faultsInjected[fault.kind]++;
      entry.fault = fault.kind;
    }
    const messages = body.messages;
    /** The reply as the script (or the fault that garbles it) makes it; null when the call ended meanwhile. */
    const compose = async (): Promise<{ status: number; payload: string; headers?: Record<string, string> } | null> => {
      const scripted: ScriptedRequest = {
        agent,
        callIndex,
        globalIndex,
        body,
        messages,
        text: parsed.text,
        images: parsed.images,
        temperature,
        model,
        mode,
        toolName,
        signal: call.signal,
      };

      let text: string;
      let finishReason = mode === "tool" ? "tool_calls" : "stop";
      let replyMode = mode;
      const kind = fault?.kind;
      if (verdict.prose) {
        // The provider ignored the requested format: the model answers as it likes, in prose.
        text = PROSE_REPLY;
        replyMode = "content";
        finishReason = "stop";
      } else if (kind === "schema-violation") {
        text = JSON.stringify({ unexpected: true });
      } else if (kind === "malformed-json") {
        // In tool mode this is a model that answered in prose instead of calling the tool.
        text = MALFORMED_JSON_TEXT;
        replyMode = "content";
        finishReason = "stop";
      } else if (kind === "tool-args-not-json") {
        text = "{oops: this is not json";
        replyMode = "tool";
        finishReason = "tool_calls";
      } else {
        let value: unknown;
        try {
          value = await runScript(scenario.agents[agent] ?? scenario.fallback, scripted);
        } catch (err) {
          const status = err instanceof ScriptError ? err.status : 500;
          const code = err instanceof ScriptError ? err.code : "script_error";
          const message = err instanceof Error ? err.message : String(err);
          return { status, payload: JSON.stringify(openAIError(`scripted server: ${message}`, errorTypeFor(status).type, code)) };
        }
        if (call.signal.aborted) return null;
        if (isRawReply(value)) return { status: value.status ?? 200, payload: value.body, headers: value.headers ?? {} };
        text = serialize(value);
        if (kind === "truncated-json") {
          text = truncateJson(text);
          finishReason = "length";
        }
      }

      const message: Record<string, unknown> = { role: "assistant", refusal: null };
      if (replyMode === "tool") {
        message.content = null;
        message.tool_calls = [
          { id: `call_scripted_${globalIndex}`, type: "function", function: { name: toolName ?? "tool", arguments: text } },
        ];
      } else {
        message.content = text;
      }
      // Azure filters a reply it has begun: 200, no content, finish_reason content_filter.
      const filteredReply = provider === "azure" && providerOptions.completionFilter?.test(text) === true;
      if (filteredReply) {
        message.content = null;
        delete message.tool_calls;
        finishReason = "content_filter";
      }
      const imageTokens = statesImageTokens ? parsed.imageDetails.reduce((n, d) => n + scriptedImageTokens(d), 0) : null;
      // A server that cut the prompt states only the tokens it kept (Ollama).
      const promptTokens = (verdict.keptPromptTokens ?? estimateTokens(parsed.text.length)) + (imageTokens ?? 0);
      const reasoningTokens = provider === "openai-reasoning" ? (providerOptions.reasoningTokens ?? 64) : null;
      const completionTokens = (filteredReply ? 0 : estimateTokens(text.length)) + (reasoningTokens ?? 0);
      const cachedTokens = promptCache?.lookup(messages, promptTokens) ?? null;
      entry.promptTokens = promptTokens;
      entry.completionTokens = completionTokens;
      entry.cachedTokens = cachedTokens ?? 0;
      return {
        status: 200,
        payload: JSON.stringify({
          id: `chatcmpl-scripted-${globalIndex}`,
          object: "chat.completion",
          created: Math.floor(Date.now() / 1000),
          model,
          system_fingerprint: "scripted",
          choices: [{ index: 0, message, logprobs: null, finish_reason: finishReason, ...(filteredReply ? { content_filter_results: azureFilterResult("self_harm") } : {}) }],
          ...(providerOptions.omitsUsage ? {} : { usage: {
            prompt_tokens: promptTokens,
            completion_tokens: completionTokens,
            total_tokens: promptTokens + completionTokens,
            ...(cachedTokens !== null || imageTokens !== null
              ? { prompt_tokens_details: { ...(cachedTokens !== null ? { cached_tokens: cachedTokens, audio_tokens: 0 } : {}), ...(imageTokens !== null ? { image_tokens: imageTokens } : {}) } }
              : {}),
            ...(reasoningTokens !== null ? { completion_tokens_details: { reasoning_tokens: reasoningTokens } } : {}),
            ...(verdict.statesCostPerToken !== undefined ? { cost: Number(((promptTokens + completionTokens) * verdict.statesCostPerToken).toFixed(8)) } : {}),
          } }),
        }),
      };
    };

    // Written while the call waits out its latency when the script's reply is what it will send.
    const reply = composeReply(compose, latencyMs > 0 && !verdict.prose && keepsScriptedReply(fault));
    await harness.sleep(latencyMs + (fault?.kind === "latency" ? fault.ms : 0), call, entry.start);
    if (call.signal.aborted) return;
    if (await harness.endedByConnectionFault(fault, call, res)) return;
    if (fault?.kind === "status") {
      const { type, code } = errorTypeFor(fault.status);
      const headers: Record<string, string> = {};
      if (fault.retryAfterSec !== undefined) headers["retry-after"] = String(fault.retryAfterSec);
      const payload = fault.body ?? JSON.stringify(openAIError(`scripted fault: HTTP ${fault.status}`, type, code));
      send(fault.status, payload, headers);
      return;
    }

    const made = await reply();
    if (call.signal.aborted || made === null) return;
    send(made.status, made.payload, { ...verdict.headers, ...made.headers });
    if (verdict.keptPromptTokens !== undefined) revealed.add("context");
    if (verdict.prose) revealed.add(verdict.prose.reveals);
  };

  const vendors = new ScriptedVendorRoutes(() => `http://${opts.host ?? "127.0.0.1"}:${port}/v1/chat/completions`);
  const harness = new HttpHarness(async (req, res) => {
    const path = new URL(req.url ?? "/", "http://scripted.invalid").pathname.replace(/\/+$/, "");
    if (await vendors.handle(req, res, path)) return;
    // Azure OpenAI's route for a deployment, beside the OpenAI one.
    if (path === "/v1/chat/completions" || /^\/openai\/deployments\/[^/]+\/chat\/completions$/.test(path)) {
      if (req.method !== "POST") {
        req.resume();
        reject(res, 405, `method ${req.method ?? ""} not allowed on ${path}`, "method_not_allowed");
        return;
      }
      await handleCompletion(req, res);
      return;
    }
    req.resume();
    if (req.method === "GET" && path === "/v1/models") {
      const names = new Set([...configuredModels, ...seenModels]);
      if (names.size === 0) names.add("scripted");
      const created = Math.floor(Date.now() / 1000);
      writeJson(res, 200, {
        object: "list",
        data: [...names].map((id) => ({ id, object: "model", created, owned_by: "medmmv-scripted" })),
      });
      return;
    }
    reject(res, 404, `unknown route ${req.method ?? ""} ${path}`, "not_found");
  });
  const port = await harness.listen(opts.host);

  return {
    baseUrl: `http://${opts.host ?? "127.0.0.1"}:${port}/v1`,
    close: () => harness.close(),
    setScenario: (s) => {
      scenario = s;
    },
    setLatency: (ms) => {
      latencyMs = ms;
    },
    setPromptCache: (o) => {
      promptCache = cacheFrom(o);
    },
    setStatesImageTokens: (on) => {
      statesImageTokens = on;
    },
    setProvider: (p, o = {}) => {
      provider = p;
      providerOptions = o;
      revealed = new Set();
      throttled = 0;
      brokenAfterReveal = [];
    },
    addFault: (f) => faults.add(f),
    clearFaults: () => faults.clear(),
    releaseHeld: (how = "answer") => harness.releaseHeld(how),
    stats: () => ({
      total,
      byAgent: Object.fromEntries(byAgent),
      inFlight: harness.inFlight,
      held: harness.heldCount,
      peakInFlight: harness.peakInFlight,
      peakInFlightByAgent: Object.fromEntries(harness.peakInFlightByKey),
      disconnects: harness.disconnects,
      rejected,
      faultsInjected: { ...harness.faultsInjected },
      log: log.map((e) => ({ ...e })),
      rules: { profile: provider, revealed: [...revealed], brokenAfterReveal: brokenAfterReveal.map((b) => ({ ...b })) },
    }),
    vendors,
    reset: () => {
      vendors.reset();
      total = 0;
      rejected = 0;
      byAgent = new Map();
      log = [];
      revealed = new Set();
      throttled = 0;
      brokenAfterReveal = [];
      promptCache?.reset();
      faults.resetRandom();
      harness.resetCounters();
    },
  };
}
