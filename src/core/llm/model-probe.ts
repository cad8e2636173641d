import type { Config } from "../config.js";
import { networkCode } from "./provider-errors.js";
import { readRejection } from "./provider-rejection.js";
import { readCappedBody } from "../net/read-capped-body.js";
import { parseJsonObject } from "./reply-json.js";
import { OPENAI_DEFAULT_BASE_URL } from "./chat-models.js";
import type { TokenParameter } from "./model-profile.js";
import { isRecord } from "../contracts/is-record.js";
import { parseModelSpec } from "./model-spec.js";
import { setTimeout as sleep } from "node:timers/promises";
import { CHARS_PER_TOKEN, truncatedPrompt } from "./context-truncation.js";
import { PROBE_MARK } from "./format-probe.js";

/**
 * `medmmv models check`: a handful of tiny requests (11 per model, and their retries) that
 * find out what a configured model and its server accept: a temperature, each
 * structured-output mode, one and two images, the name of the output budget, a short
 * reasoning call, and one long prompt that shows the window the server really runs (a
 * refusal that states it, or a reply whose usage shows the prompt was cut: Ollama's 4k
 * default). The first request tells an unreachable endpoint (a wrong URL), a refused key and
 * an unknown model apart from a missing capability, and stops there. A transient failure (no
 * answer, 408, 429, 5xx without a stated reason) is retried before it is read as a missing
 * capability: one 5xx must not recommend a profile without tools.
 */
export interface ModelCheck {
  model: string;
  /** null when the endpoint could not be used at all (see `problem`). */
  temperature: boolean | null;
  structuredOutput: { jsonSchema: boolean; functionCalling: boolean; jsonMode: boolean } | null;
  /** Images one request may carry: 0 (none), 1, or null for two or more with no limit seen. */
  imagesPerRequest: number | null;
  /**
   * The server's context window as the long probe found it: `tokens` is the window a refusal
   * stated, or the tokens a server kept of a prompt it cut (`truncates`: it answers anyway,
   * and a longer prompt is silently cut); null tokens: the probe fit (the window is at least
   * `probedTokens`), or the probe failed.
   */
  contextWindow: { tokens: number | null; truncates: boolean; probedTokens: number } | null;
  reasoning: boolean | null;
  tokenParameter: TokenParameter | null;
  requests: number;
  /**
   * Why the model could not be checked: `unreachable` (URL), `unauthorized` (key), `not-found`
   * (URL or model name); `not-probed`: an anthropic: or google-genai: model, reached through
   * LangChain's own integration, which this probe (it speaks the chat-completions API) does not test.
   */
  problem: { kind: "unreachable" | "unauthorized" | "not-found" | "failed" | "not-probed"; message: string } | null;
  /** The settings to use with this model (environment variables). */
  settings: Record<string, string>;
}

/** A 1×1 PNG: the smallest picture a vision model will take. */
const TINY_PNG = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg==";
const MARK = PROBE_MARK;
/** Attempts per probe request when its failure is transient. */
const PROBE_ATTEMPTS = 3;
/** The long probe's text: about 6,000 tokens, past a 4k window (Ollama's default, llama.cpp's -c 4096) and inside any larger one. */
const LONG_PROBE = Array.from({ length: 260 }, (_, i) => `Line ${i + 1} of a long health-check text; it only measures how much of a prompt the server reads. `).join("");
const SCHEMA = { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"], additionalProperties: false };
const MAX_PROBE_BYTES = 1024 * 1024;

interface Exchange {
  status: number;
  body: unknown;
  error: string | null;
}

function endpointOf(cfg: Config["llm"], model: string): { url: string; headers: Record<string, string> } {
  const az = cfg.azure;
  if (az) {
    const base = az.endpoint ?? `https://${az.instanceName}.openai.azure.com`;
    return { url: `${base}/openai/deployments/${encodeURIComponent(model)}/chat/completions?api-version=${az.apiVersion}`, headers: { "api-key": az.apiKey } };
  }
  const base = (cfg.baseUrl ?? OPENAI_DEFAULT_BASE_URL).replace(/\/+$/, "");
  return { url: `${base}/chat/completions`, headers: cfg.apiKey ? { authorization: `Bearer ${cfg.apiKey}` } : {} };
}

function firstMessage(body: unknown): Record<string, unknown> | null {
  if (!isRecord(body) || !Array.isArray(body.choices)) return null;
  const c = body.choices[0];
  return isRecord(c) && isRecord(c.message) ? c.message : null;
}

function okJson(value: unknown): boolean {
  return isRecord(value) && typeof value.ok === "boolean";
}

export async function checkModel(cfg: Config["llm"], model: string, timeoutMs = Math.min(cfg.timeoutMs, 60_000)): Promise<ModelCheck> {
  const out: ModelCheck = { model, temperature: null, structuredOutput: null, imagesPerRequest: null, contextWindow: null, reasoning: null, tokenParameter: null, requests: 0, problem: null, settings: {} };
  // The name on the wire is the model's own (openai:gpt-5 → gpt-5); Claude and Gemini by their own APIs are not probed here.
  const spec = parseModelSpec(model);
  if (spec.provider === "anthropic" || spec.provider === "google-genai" || spec.provider === "bedrock" || spec.provider === "google-vertexai") {
    out.problem = { kind: "not-probed", message: `${model} is reached through LangChain's ${spec.provider} integration, not a chat-completions endpoint; models check does not probe it (docs/models.md says what it takes)` };
    return out;
  }
  const wireModel = spec.model;
  const { url, headers } = endpointOf(cfg, wireModel);
  let requests = 0;
  const sendOnce = async (extra: Record<string, unknown>, content: unknown): Promise<Exchange> => {
    requests++;
    const body = { model: wireModel, messages: [{ role: "system", content: `You answer health-check requests. ${MARK}` }, { role: "user", content }], ...extra };
    try {
      const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body), signal: AbortSignal.timeout(timeoutMs) });
      const bytes = await readCappedBody(res, MAX_PROBE_BYTES);
      let parsed: unknown = null;
      try {
        parsed = bytes ? JSON.parse(bytes.toString("utf8")) : null;
      } catch {
        parsed = null;
      }
      return { status: res.status, body: parsed, error: null };
    } catch (err) {
      return { status: 0, body: null, error: networkCode(err) ?? (err as Error).name ?? "error" };
    }
  };
  // A transient failure is asked again (with backoff) before it is read as a missing capability;
  // a refusal whose reason the server states (a parameter, no images, the window) is an answer.
  const transient = (x: Exchange) => (x.status === 0 && x.error !== "ECONNREFUSED" && x.error !== "ENOTFOUND") || x.status === 408 || x.status === 429 || (x.status >= 500 && readRejection(x.status, x.body) === null);
  const send = async (extra: Record<string, unknown>, content: unknown = 'Reply with the JSON object {"ok": true} and nothing else.'): Promise<Exchange> => {
    let x = await sendOnce(extra, content);
    for (let attempt = 1; attempt < PROBE_ATTEMPTS && transient(x); attempt++) {
      await sleep(cfg.backoffBaseMs * 2 ** (attempt - 1));
      x = await sendOnce(extra, content);
    }
    return x;
  };

  // 1. Can we talk to it at all? No optional parameter, so only the endpoint, key or name can fail.
  const plain = await send({});
  if (plain.status === 0) out.problem = { kind: "unreachable", message: `cannot reach ${url} (${plain.error}): check ${cfg.azure ? "AZURE_OPENAI_ENDPOINT" : "OPENAI_BASE_URL"}` };
  else if (plain.status === 401 || plain.status === 403) out.problem = { kind: "unauthorized", message: `the server refused the key (HTTP ${plain.status}): check ${cfg.azure ? "AZURE_OPENAI_API_KEY" : "OPENAI_API_KEY"}` };
  else if (plain.status === 404) out.problem = { kind: "not-found", message: `HTTP 404 at ${url}: check the URL (it ends in /v1) and the model name "${model}"` };
  else if (plain.status !== 200) out.problem = { kind: "failed", message: `HTTP ${plain.status} on a plain request: ${describe(plain)}` };
  if (out.problem) {
    out.requests = requests;
    return out;
  }
  const works = (x: Exchange) => x.status === 200 && firstMessage(x.body) !== null;
  // 2. A temperature other than the default.
  out.temperature = works(await send({ temperature: 0.7 }));
  // 3–5. Each structured-output mode: accepted and actually obeyed.
  const schema = await send({ response_format: { type: "json_schema", json_schema: { name: "check", strict: true, schema: SCHEMA } } });
  const tools = await send({ tools: [{ type: "function", function: { name: "check", description: "Report the check.", parameters: SCHEMA } }], tool_choice: { type: "function", function: { name: "check" } } });
  const jsonMode = await send({ response_format: { type: "json_object" } });
  const contentJson = (x: Exchange) => works(x) && typeof firstMessage(x.body)?.content === "string" && okJson(parseJsonObject(firstMessage(x.body)!.content as string));
  const toolArgs = (x: Exchange) => {
    const calls = firstMessage(x.body)?.tool_calls;
    const fn = Array.isArray(calls) && isRecord(calls[0]) && isRecord(calls[0].function) ? calls[0].function : null;
    return works(x) && typeof fn?.arguments === "string" && okJson(parseJsonObject(fn.arguments));
  };
  out.structuredOutput = { jsonSchema: contentJson(schema), functionCalling: toolArgs(tools), jsonMode: contentJson(jsonMode) };
  // 6–7. One image, then two.
  const image = (n: number) => [{ type: "text", text: `Reply with {"ok": true} if you can see ${n === 1 ? "the picture" : "both pictures"}.` }, ...Array.from({ length: n }, () => ({ type: "image_url", image_url: { url: TINY_PNG } }))];
  const one = await send({}, image(1));
  if (!works(one)) out.imagesPerRequest = 0;
  else {
    const two = await send({}, image(2));
    const limit = two.status === 200 ? null : readRejection(two.status, two.body);
    out.imagesPerRequest = works(two) ? null : limit?.kind === "imageLimit" ? limit.limit : 1;
  }
  // 8. The output budget's name.
  const budget = await send({ max_tokens: 64 });
  const budgetRejected = budget.status === 200 ? null : readRejection(budget.status, budget.body);
  out.tokenParameter = works(budget) ? "max_tokens" : budgetRejected?.kind === "parameter" && budgetRejected.parameter === "max_tokens" ? "max_completion_tokens" : null;
  // 9. A short reasoning call: reasoning_effort accepted, and reasoning tokens reported.
  const reasoning = await send({ reasoning_effort: "low", ...(out.tokenParameter === "max_completion_tokens" ? { max_completion_tokens: 256 } : {}) });
  const usage = isRecord(reasoning.body) && isRecord(reasoning.body.usage) ? reasoning.body.usage : null;
  const details = usage && isRecord(usage.completion_tokens_details) ? usage.completion_tokens_details : null;
  out.reasoning = works(reasoning) && typeof details?.reasoning_tokens === "number" && details.reasoning_tokens > 0;
  // 10. One long prompt: the window the server really runs.
  out.contextWindow = await probeWindow(send);
  out.requests = requests;
  out.settings = settingsFor(out);
  return out;
}

/** The long probe: a refusal stating the window, a reply whose usage shows a cut, or a prompt that fit. */
async function probeWindow(send: (extra: Record<string, unknown>, content?: unknown) => Promise<Exchange>): Promise<ModelCheck["contextWindow"]> {
  const probedTokens = Math.ceil(LONG_PROBE.length / CHARS_PER_TOKEN);
  const x = await send({}, `${LONG_PROBE}\nReply with the JSON object {"ok": true} and nothing else.`);
  if (x.status !== 200) {
    const refusal = readRejection(x.status, x.body);
    return refusal?.kind === "contextLength" ? { tokens: refusal.window, truncates: false, probedTokens } : null;
  }
  const usage = isRecord(x.body) && isRecord(x.body.usage) ? x.body.usage : null;
  const promptTokens = typeof usage?.prompt_tokens === "number" ? usage.prompt_tokens : undefined;
  const cut = truncatedPrompt(LONG_PROBE.length, promptTokens);
  return cut ? { tokens: cut.promptTokens, truncates: true, probedTokens } : { tokens: null, truncates: false, probedTokens };
}

function describe(x: Exchange): string {
  const r = isRecord(x.body) ? (isRecord(x.body.error) ? x.body.error : x.body) : null;
  return typeof r?.message === "string" ? r.message.slice(0, 200) : "no message";
}

/** The environment that makes medmmv use what works, given a check's findings. */
export function settingsFor(c: ModelCheck): Record<string, string> {
  if (!c.structuredOutput) return {};
  const modes = (["jsonSchema", "functionCalling", "jsonMode"] as const).filter((m) => c.structuredOutput![m]);
  const profile: Record<string, unknown> = {};
  if (c.temperature === false) profile.temperature = false;
  if (c.tokenParameter === "max_completion_tokens") profile.tokenParameter = "max_completion_tokens";
  if (c.reasoning) profile.reasoning = true;
  // 0 too: a text-only model's calls then go without images (said in provenance) rather than be refused.
  if (c.imagesPerRequest !== null) profile.imagesPerRequest = c.imagesPerRequest;
  // A window the probe found; a server that cuts silently must be given a larger one (see the check's message).
  if (c.contextWindow?.tokens) profile.contextWindow = c.contextWindow.tokens;
  if (modes.length) profile.structuredOutput = modes;
  const out: Record<string, string> = {};
  if (modes[0]) out.MEDMMV_STRUCTURED_OUTPUT = modes[0];
  out.MEDMMV_MODEL_PROFILES = JSON.stringify({ [c.model]: profile });
  return out;
}
