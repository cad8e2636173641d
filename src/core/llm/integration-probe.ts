import { HumanMessage, SystemMessage, type AIMessage, type BaseMessage, type MessageContent } from "@langchain/core/messages";
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { setTimeout as sleep } from "node:timers/promises";
import { z } from "zod";
import type { Config } from "../config.js";
import { causes } from "../contracts/errors.js";
import { isRecord } from "../contracts/is-record.js";
import type { ResolvedCall } from "./call-route.js";
import { CHARS_PER_TOKEN, truncatedPrompt } from "./context-truncation.js";
import { withReplyTap, type ReplyTap } from "./model-fetch.js";
import { networkCode } from "./provider-errors.js";
import { readRejection, rejectionOf, type Rejection } from "./provider-rejection.js";
import { readReplyJson } from "./reply-json.js";
import type { StructuredMethodOf } from "./providers/provider-module.js";
import { LONG_PROBE, PROBE_ASK, PROBE_ATTEMPTS, PROBE_SYSTEM, TINY_PNG, imageAsk, type ModelCheck } from "./probe-shared.js";

/**
 * `models check` for a provider reached through its own LangChain integration (Anthropic's
 * Messages API, Gemini's generateContent, Bedrock's Converse: providers/*.ts). The requests are
 * the integration's own, built by the provider's module exactly as a case's calls are, so what
 * this finds is what a case will meet: whether the server answers at all (URL, credentials,
 * model name), a temperature, each way the integration can ask for JSON, one and two images,
 * and the long prompt that shows the window. A transient failure is retried before it is read
 * as a missing capability, as on the chat-completions wire. The output budget's name and
 * reasoning_effort are the integration's to send: not asked.
 */

/** What the probe asks each structured-output method for. */
const Check = z.object({ ok: z.boolean() }).describe("Report the check.");

type Outcome = { ok: true; raw: AIMessage | undefined; parsed: unknown } | { ok: false; status: number | null; error: unknown; rejection: Rejection | null; network: string | null };

/**
 * The HTTP status of an integration's error: the Anthropic and Gemini SDKs' `status`, the AWS
 * SDK's `$metadata.httpStatusCode`, a fetch-style (gaxios) error's `response.status`.
 */
function statusOf(err: unknown): number | null {
  for (const e of causes(err)) {
    const rec = e as { status?: unknown; $metadata?: { httpStatusCode?: unknown }; response?: { status?: unknown } };
    if (typeof rec.status === "number") return rec.status;
    if (typeof rec.$metadata?.httpStatusCode === "number") return rec.$metadata.httpStatusCode;
    if (typeof rec.response?.status === "number") return rec.response.status;
  }
  return null;
}

/** A failure with no reply that another try may not meet: a timeout, or a connection reset or cut (not a refused or unknown host). */
function transientWithoutStatus(err: unknown): boolean {
  for (const e of causes(err)) {
    const rec = e as { name?: unknown; code?: unknown; message?: unknown };
    if (rec.name === "TimeoutError" || rec.name === "AbortError") return true;
    if (typeof rec.code === "string" && /^(ECONNRESET|EPIPE|ETIMEDOUT|UND_ERR_SOCKET|UND_ERR_CLOSED)$/.test(rec.code)) return true;
    if (typeof rec.message === "string" && /\b(fetch failed|socket hang up|terminated)\b/i.test(rec.message) && networkCode(err) === null) return true;
  }
  return false;
}

function transient(o: Outcome): boolean {
  if (o.ok) return false;
  if (o.status === null) return o.network === null && transientWithoutStatus(o.error);
  return (o.status === 408 || o.status === 429 || o.status >= 500) && o.rejection === null;
}

/** The error's own words, short (a probe carries no case: nothing to keep out). */
function messageOf(err: unknown): string {
  const e = err as { name?: unknown; message?: unknown };
  return `${typeof e?.name === "string" ? `${e.name}: ` : ""}${typeof e?.message === "string" ? e.message : String(err)}`.slice(0, 200);
}

function okJson(value: unknown): boolean {
  return isRecord(value) && typeof value.ok === "boolean";
}

export async function probeIntegration(cfg: Config["llm"], route: ResolvedCall, timeoutMs: number): Promise<ModelCheck> {
  const module = route.module!;
  const out: ModelCheck = { model: route.spec, provider: module.id, via: "integration", temperature: null, structuredOutput: null, imagesPerRequest: null, contextWindow: null, reasoning: null, tokenParameter: null, requests: 0, problem: null, settings: {} };
  const variables = route.failure.variables ?? { url: "the provider's base URL", key: "the provider's key" };
  const built = new Map<number | undefined, BaseChatModel>();
  const modelAt = (temperature?: number): BaseChatModel => {
    let m = built.get(temperature);
    if (!m) {
      m = module.build({ spec: route.spec, model: route.model, baseUrl: route.baseUrl, apiKey: route.apiKey }, temperature === undefined ? {} : { temperature }, cfg);
      built.set(temperature, m);
    }
    return m;
  };
  try {
    await module.load?.();
    modelAt();
  } catch (err) {
    // A configuration the provider cannot run on (Bedrock without a region, a missing key): no request was sent.
    out.problem = { kind: "failed", message: messageOf(err) };
    return out;
  }

  let requests = 0;
  const once = async (run: (signal: AbortSignal) => Promise<{ raw: AIMessage | undefined; parsed: unknown }>): Promise<Outcome> => {
    requests++;
    const tap: ReplyTap = { replied: false };
    try {
      const r = await withReplyTap(tap, () => run(AbortSignal.timeout(timeoutMs)));
      return { ok: true, ...r };
    } catch (err) {
      const status = statusOf(err) ?? tap.rejected?.status ?? null;
      // The body as the SDK kept it (Anthropic's), else the error's message, which Gemini's and the AWS SDK's carry the server's words in.
      const rejection = rejectionOf(err, tap.rejected) ?? (status !== null ? readRejection(status, { error: { message: String((err as { message?: unknown })?.message ?? "") } }) : null);
      return { ok: false, status, error: err, rejection, network: networkCode(err) };
    }
  };
  const send = async (run: (signal: AbortSignal) => Promise<{ raw: AIMessage | undefined; parsed: unknown }>): Promise<Outcome> => {
    let o = await once(run);
    for (let attempt = 1; attempt < PROBE_ATTEMPTS && transient(o); attempt++) {
      await sleep(cfg.backoffBaseMs * 2 ** (attempt - 1));
      o = await once(run);
    }
    return o;
  };
  const messages = (content: MessageContent): BaseMessage[] => [new SystemMessage(PROBE_SYSTEM), new HumanMessage({ content })];
  const plain = (content: MessageContent, temperature?: number) => send(async (signal) => ({ raw: (await modelAt(temperature).invoke(messages(content), { signal })) as AIMessage, parsed: undefined }));
  const works = (o: Outcome) => o.ok;

  // 1. Can we talk to it at all? Only the endpoint, the credentials or the name can fail a plain prompt.
  const first = await plain(PROBE_ASK);
  if (!first.ok) {
    if (first.network !== null) out.problem = { kind: "unreachable", message: `cannot reach ${route.endpoint} (${first.network}): check ${variables.url}` };
    else if (first.status === 401 || first.status === 403) out.problem = { kind: "unauthorized", message: `the server refused the credentials (HTTP ${first.status}): check ${variables.key}` };
    else if (first.status === 404) out.problem = { kind: "not-found", message: `HTTP 404 at ${route.endpoint}: check ${variables.url} and the model name "${route.model}"` };
    else out.problem = { kind: "failed", message: `${first.status === null ? "no reply" : `HTTP ${first.status}`} on a plain request: ${messageOf(first.error)}` };
    out.requests = requests;
    return out;
  }
  // 2. A temperature other than the default.
  out.temperature = works(await plain(PROBE_ASK, 0.7));
  // 3. Each way the integration can ask for JSON: accepted, and answered with the object.
  const structured = async (method: StructuredMethodOf): Promise<boolean> => {
    const runnable = modelAt().withStructuredOutput(Check, { name: "check", method, includeRaw: true });
    const o = await send(async (signal) => {
      const r = (await runnable.invoke(messages(PROBE_ASK), { signal })) as { raw?: BaseMessage; parsed?: unknown };
      return { raw: r.raw as AIMessage | undefined, parsed: r.parsed };
    });
    return o.ok && (okJson(o.parsed) || (o.raw !== undefined && okJson(readReplyJson(o.raw))));
  };
  const modes: Record<StructuredMethodOf, boolean | null> = { jsonSchema: null, functionCalling: null };
  for (const method of module.structuredMethods(route.model)) modes[method] = await structured(method);
  out.structuredOutput = { ...modes, jsonMode: null };
  // 4. One image, then two.
  const image = (n: number): MessageContent => [{ type: "text", text: imageAsk(n) }, ...Array.from({ length: n }, () => ({ type: "image_url", image_url: { url: TINY_PNG } }))];
  const one = await plain(image(1));
  if (!one.ok) out.imagesPerRequest = 0;
  else {
    const two = await plain(image(2));
    out.imagesPerRequest = two.ok ? null : two.rejection?.kind === "imageLimit" ? two.rejection.limit : 1;
  }
  // 5. One long prompt: the window the server really runs.
  const probedTokens = Math.ceil(LONG_PROBE.length / CHARS_PER_TOKEN);
  const long = await plain(`${LONG_PROBE}\n${PROBE_ASK}`);
  if (!long.ok) out.contextWindow = long.rejection?.kind === "contextLength" ? { tokens: long.rejection.window, truncates: false, probedTokens } : null;
  else {
    const cut = truncatedPrompt(LONG_PROBE.length, long.raw?.usage_metadata?.input_tokens);
    out.contextWindow = cut ? { tokens: cut.promptTokens, truncates: true, probedTokens } : { tokens: null, truncates: false, probedTokens };
  }
  out.requests = requests;
  out.settings = integrationSettings(out, route);
  return out;
}

/**
 * The environment to set for a model on its own integration: only what applies there. Its
 * calls are not built to a model profile (providers/provider-module.ts structuredMethod) but for
 * its image limit, so a profile is written only for a model that takes no images; the JSON method is MEDMMV_STRUCTURED_OUTPUT's where the
 * integration takes more than one (Gemini), and is moved only when the configured one failed.
 */
function integrationSettings(c: ModelCheck, route: ResolvedCall): Record<string, string> {
  const out: Record<string, string> = {};
  // The one profile field these calls obey (call-route.ts): a model that refused one image is sent none.
  if (c.imagesPerRequest === 0) out.MEDMMV_MODEL_PROFILES = JSON.stringify({ [c.model]: { imagesPerRequest: 0 } });
  const configured = route.structuredMethod;
  const so = c.structuredOutput;
  if (!so || configured === null || so[configured] !== false) return out;
  const other = route.module!.structuredMethods(route.model).find((m) => so[m] === true);
  return other ? { ...out, MEDMMV_STRUCTURED_OUTPUT: other } : out;
}
