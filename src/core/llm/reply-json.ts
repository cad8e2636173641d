import type { AIMessage } from "@langchain/core/messages";
import type { WireMessage } from "./model-fetch.js";

/**
 * The reply's JSON value: the forced tool call's arguments, or the content (tolerating code
 * fences and prose around the object). Anything unparseable is undefined, which the caller
 * re-asks about; it is never a transport failure to retry.
 */
export function readReplyJson(raw: AIMessage | undefined): unknown {
  if (!raw) return undefined;
  const call = raw.tool_calls?.[0];
  if (call && call.args && typeof call.args === "object") return call.args;
  // Arguments LangChain could not parse as JSON land here, as the raw string.
  const bad = raw.invalid_tool_calls?.[0];
  if (bad && typeof bad.args === "string") return parseJsonObject(bad.args);
  const content = raw.content;
  if (typeof content === "string") return parseJsonObject(content);
  if (Array.isArray(content)) {
    const text = content.map((p) => (typeof p === "object" && p !== null && "text" in p && typeof p.text === "string" ? p.text : "")).join("");
    return text ? parseJsonObject(text) : undefined;
  }
  return undefined;
}

/**
 * The same, from the message as it came over the wire: when the SDK itself refused the reply
 * (its strict JSON.parse of a json_schema reply), a fenced or prose-wrapped object is still read.
 */
export function readWireJson(message: WireMessage | undefined): unknown {
  if (!message) return undefined;
  const args = message.tool_calls?.[0]?.function?.arguments;
  if (typeof args === "string") return parseJsonObject(args);
  if (args && typeof args === "object") return args;
  return typeof message.content === "string" ? parseJsonObject(message.content) : undefined;
}

export function parseJsonObject(text: string): unknown {
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
