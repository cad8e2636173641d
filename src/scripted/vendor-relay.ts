/**
 * The scripted Anthropic and Gemini endpoints are translators in front of the scripted
 * chat-completions route of the same server: a request in the provider's wire format is
 * rewritten as the chat-completions request it means, sent there over loopback HTTP, and the
 * reply rewritten back. So every scenario, script, fault, latency and call-log entry of the
 * scripted server applies to these providers unchanged, and a whole clinical case runs
 * through the real `@langchain/anthropic` and `@langchain/google-genai` clients.
 */
import type http from "node:http";
import { readBody, writeJson, writeRaw } from "./faults.js";
import { isRecord } from "../core/contracts/is-record.js";
import { AGENT_MARKER } from "./scripted-wire.js";

export const MAX_VENDOR_BODY_BYTES = 64 * 1024 * 1024;

/** What the chat-completions route answered: JSON, other bytes, or no answer at all (a dropped connection). */
export type RelayOutcome =
  | { kind: "reply"; status: number; headers: Headers; text: string; json: unknown }
  | { kind: "dropped" }
  | { kind: "client-gone" };

/** The request body as JSON, or the reason it is not (answered by the caller in the provider's error shape). */
export async function readJsonBody(req: http.IncomingMessage): Promise<{ ok: true; body: unknown } | { ok: false; status: number; message: string } | null> {
  const read = await readBody(req, MAX_VENDOR_BODY_BYTES);
  if (!read.ok || read.body === undefined) return read.tooLarge ? { ok: false, status: 413, message: "request body too large for the scripted server" } : null;
  try {
    return { ok: true, body: JSON.parse(read.body.toString("utf8")) };
  } catch {
    return { ok: false, status: 400, message: "request body is not valid JSON" };
  }
}

/**
 * Send `chatBody` to the chat-completions route; the relay is abandoned (and the scripted
 * call sees its client leave) when our own client leaves first.
 */
export async function relayChat(url: string, chatBody: Record<string, unknown>, res: http.ServerResponse): Promise<RelayOutcome> {
  const ctrl = new AbortController();
  const onClose = () => {
    if (!res.writableEnded) ctrl.abort();
  };
  res.once("close", onClose);
  try {
    const reply = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer scripted-relay" },
      body: JSON.stringify(chatBody),
      signal: ctrl.signal,
    });
    const text = await reply.text();
    let json: unknown = undefined;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { kind: "reply", status: reply.status, headers: reply.headers, text, json };
  } catch {
    return ctrl.signal.aborted ? { kind: "client-gone" } : { kind: "dropped" };
  } finally {
    res.off("close", onClose);
  }
}

/** The scripted route dropped the connection (a "reset" fault): so does this one. */
export function dropClient(res: http.ServerResponse): void {
  res.socket?.destroy();
  res.destroy();
}

/** The chat-completions reply's first choice, when it is one. */
export function firstChoice(json: unknown): { message: Record<string, unknown>; finishReason: string; usage: Record<string, unknown> } | null {
  if (!isRecord(json) || !Array.isArray(json.choices)) return null;
  const c: unknown = json.choices[0];
  if (!isRecord(c) || !isRecord(c.message)) return null;
  return { message: c.message, finishReason: typeof c.finish_reason === "string" ? c.finish_reason : "stop", usage: isRecord(json.usage) ? json.usage : {} };
}

/** The message of a chat-completions error body, when the reply is one. */
export function chatErrorMessage(json: unknown): string | null {
  return isRecord(json) && isRecord(json.error) && typeof json.error.message === "string" ? json.error.message : null;
}

/** The headers a provider's error reply keeps from the scripted one (Retry-After above all). */
export function keptHeaders(from: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of ["retry-after", "retry-after-ms"]) {
    const v = from.get(name);
    if (v !== null) out[name] = v;
  }
  return out;
}

export { writeJson, writeRaw };

export type ChatChoice = NonNullable<ReturnType<typeof firstChoice>>;

/** How a provider's endpoint answers what is not a chat reply to translate. */
export interface ProviderErrors {
  /** Whether a scripted error body is already in the provider's own shape (a fault written for it): sent as it is. */
  isOwn(json: unknown): boolean;
  /** The provider's own error object from another of its endpoints' shapes (Gemini's OpenAI-compatible array `[{ error }]`), or null. */
  ownFromOtherShape?(json: unknown): unknown;
  send(res: http.ServerResponse, status: number, message: string, headers: Record<string, string>): void;
}

/**
 * Relay `chatBody` and settle every outcome but a chat reply: the client gone (nothing to
 * send), a dropped connection (dropped here too), an error (in the provider's shape, its
 * Retry-After kept), a raw reply of the scenario's (garbage, an HTML page: as it is). Returns
 * the reply's status, and its first choice when there is one left to translate.
 */
export async function relayForChoice(url: string, chatBody: Record<string, unknown>, res: http.ServerResponse, errors: ProviderErrors): Promise<{ status: number; choice: ChatChoice | null }> {
  const outcome = await relayChat(url, chatBody, res);
  if (outcome.kind === "client-gone") return { status: 0, choice: null };
  if (outcome.kind === "dropped") {
    dropClient(res);
    return { status: 0, choice: null };
  }
  if (outcome.status >= 400) {
    const own = errors.ownFromOtherShape?.(outcome.json) ?? null;
    if (own !== null) writeJson(res, outcome.status, own, keptHeaders(outcome.headers));
    else if (errors.isOwn(outcome.json)) writeRaw(res, outcome.status, outcome.text, keptHeaders(outcome.headers));
    else errors.send(res, outcome.status, chatErrorMessage(outcome.json) ?? `HTTP ${outcome.status}`, keptHeaders(outcome.headers));
    return { status: outcome.status, choice: null };
  }
  const choice = firstChoice(outcome.json);
  if (!choice) writeRaw(res, outcome.status, outcome.text, { "content-type": outcome.headers.get("content-type") ?? "application/json" });
  return { status: outcome.status, choice };
}

/** The reply's text, and its tool calls with their arguments parsed (null: not a JSON object, as no real provider would send). */
export function replyParts(choice: ChatChoice): { text: string; calls: Array<{ name: string; args: Record<string, unknown> | null; raw: string }> } {
  const text = typeof choice.message.content === "string" ? choice.message.content : "";
  const calls = (Array.isArray(choice.message.tool_calls) ? choice.message.tool_calls.filter(isRecord) : []).map((c) => {
    const fn = isRecord(c.function) ? c.function : {};
    const raw = String(fn.arguments);
    let args: unknown;
    try {
      args = JSON.parse(raw);
    } catch {
      args = undefined;
    }
    return { name: String(fn.name), args: isRecord(args) ? args : null, raw };
  });
  return { text, calls };
}

/** Image parts in chat-completions messages. */
export function countImages(messages: ReadonlyArray<Record<string, unknown>>): number {
  return messages.reduce((n, m) => n + (Array.isArray(m.content) ? m.content.filter((p: { type?: unknown }) => p.type === "image_url").length : 0), 0);
}

/**
 * The agent a chat request is for, as the scripted chat route routes it (the marker in the
 * system message first, then anywhere): for the providers' own call logs.
 */
export function agentOf(messages: ReadonlyArray<Record<string, unknown>>): string {
  const text = (m: Record<string, unknown>) => (typeof m.content === "string" ? m.content : Array.isArray(m.content) ? m.content.map((p: { text?: unknown }) => (typeof p.text === "string" ? p.text : "")).join("\n") : "");
  const found = AGENT_MARKER.exec(messages.filter((m) => m.role === "system").map(text).join("\n")) ?? AGENT_MARKER.exec(messages.map(text).join("\n"));
  return found?.[1] ?? "unknown";
}

