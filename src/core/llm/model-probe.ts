import type { Config } from "../config.js";
import { networkCode } from "./provider-errors.js";
import { readRejection } from "./provider-rejection.js";
import { readCappedBody } from "../net/read-capped-body.js";
import { parseJsonObject } from "./reply-json.js";
import { resolveCall, type ResolvedCall } from "./call-route.js";
import { probeIntegration } from "./integration-probe.js";
import { LONG_PROBE, PROBE_ASK, PROBE_ATTEMPTS, PROBE_SYSTEM, TINY_PNG, imageAsk, type ModelCheck } from "./probe-shared.js";
import { isRecord } from "../contracts/is-record.js";
import { setTimeout as sleep } from "node:timers/promises";
import { CHARS_PER_TOKEN, truncatedPrompt } from "./context-truncation.js";

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
 * A model is resolved as a call would be (call-route.ts): a provider on the chat-completions
 * wire is probed here request by request; another through its own integration (integration-probe.ts).
 */
export type { ModelCheck } from "./probe-shared.js";

const SCHEMA = { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"], additionalProperties: false };
const MAX_PROBE_BYTES = 1024 * 1024;

interface Exchange {
  status: number;
  body: unknown;
  error: string | null;
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
  // Resolved as the calls of the first role that names it would be (its own URL and key, if it has them).
  const role = (["executor", "vision", "judge"] as const).find((r) => cfg.models[r] === model) ?? "executor";
  const route = resolveCall(cfg, role, model, false);
  return route.module?.chatCompletionsRequest ? checkChatCompletions(cfg, route, timeoutMs) : probeIntegration(cfg, route, timeoutMs);
}

/** The probe of a model on the OpenAI chat-completions wire, request by request. */
async function checkChatCompletions(cfg: Config["llm"], route: ResolvedCall, timeoutMs: number): Promise<ModelCheck> {
  const model = route.spec;
  // Never the embedding program's model here: resolved with its provider.
  const out: ModelCheck = { model, provider: route.provider!, via: "chat-completions", temperature: null, structuredOutput: null, imagesPerRequest: null, contextWindow: null, reasoning: null, tokenParameter: null, requests: 0, problem: null, settings: {} };
  // The name on the wire is the model's own (openai:gpt-5 → gpt-5).
  const wireModel = route.model;
  const { url, headers } = route.module!.chatCompletionsRequest!(route, cfg);
  const azure = route.failure.azure;
  let requests = 0;
  const sendOnce = async (extra: Record<string, unknown>, content: unknown): Promise<Exchange> => {
    requests++;
    const body = { model: wireModel, messages: [{ role: "system", content: PROBE_SYSTEM }, { role: "user", content }], ...extra };
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
  const send = async (extra: Record<string, unknown>, content: unknown = PROBE_ASK): Promise<Exchange> => {
    let x = await sendOnce(extra, content);
    for (let attempt = 1; attempt < PROBE_ATTEMPTS && transient(x); attempt++) {
      await sleep(cfg.backoffBaseMs * 2 ** (attempt - 1));
      x = await sendOnce(extra, content);
    }
    return x;
  };

  // 1. Can we talk to it at all? No optional parameter, so only the endpoint, key or name can fail.
  const plain = await send({});
  if (plain.status === 0) out.problem = { kind: "unreachable", message: `cannot reach ${url} (${plain.error}): check ${azure ? "AZURE_OPENAI_ENDPOINT" : "OPENAI_BASE_URL"}` };
  else if (plain.status === 401 || plain.status === 403) out.problem = { kind: "unauthorized", message: `the server refused the key (HTTP ${plain.status}): check ${azure ? "AZURE_OPENAI_API_KEY" : "OPENAI_API_KEY"}` };
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
  const image = (n: number) => [{ type: "text", text: imageAsk(n) }, ...Array.from({ length: n }, () => ({ type: "image_url", image_url: { url: TINY_PNG } }))];
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
  const x = await send({}, `${LONG_PROBE}\n${PROBE_ASK}`);
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
