import { AIMessage, HumanMessage, SystemMessage, type BaseMessage } from "@langchain/core/messages";

/** Provider-neutral chat messages; images go as OpenAI `image_url` parts with data URLs. */
export type ContentPart = { type: "text"; text: string } | { type: "image_url"; image_url: { url: string; detail?: "low" | "high" } };
export interface ChatMessage {
  role: "system" | "user" | "assistant";
  content: string | ContentPart[];
}

/** An image part, as a data URL. */
export function imagePart(mimeType: string, base64: string): ContentPart {
  return { type: "image_url", image_url: { url: `data:${mimeType};base64,${base64}` } };
}

export function textOf(content: string | ContentPart[]): string {
  return typeof content === "string" ? content : content.map((p) => (p.type === "text" ? p.text : "")).join("\n");
}

export function promptChars(messages: ChatMessage[]): number {
  let n = 0;
  for (const m of messages) {
    if (typeof m.content === "string") n += m.content.length;
    else for (const p of m.content) n += p.type === "text" ? p.text.length : p.image_url.url.length;
  }
  return n;
}

/** Characters of prompt text alone (no image data): what a tokenizer's count of the prompt follows. */
export function textChars(messages: ChatMessage[]): number {
  let n = 0;
  for (const m of messages) {
    if (typeof m.content === "string") n += m.content.length;
    else for (const p of m.content) if (p.type === "text") n += p.text.length;
  }
  return n;
}

/** Decoded bytes of the images (base64 data URLs) in the messages. */
export function imageBytes(messages: ChatMessage[]): number {
  let n = 0;
  for (const m of messages) {
    if (typeof m.content === "string") continue;
    for (const p of m.content) {
      if (p.type !== "image_url") continue;
      const url = p.image_url.url;
      const comma = url.indexOf(",");
      if (!url.startsWith("data:") || comma < 0) continue;
      const b64 = url.length - comma - 1;
      const pad = url.endsWith("==") ? 2 : url.endsWith("=") ? 1 : 0;
      n += Math.floor((b64 * 3) / 4) - pad;
    }
  }
  return n;
}

/**
 * The messages with OpenAI's image `detail` on every image part ("auto": left unset, the
 * provider's own default). Set before the response-cache key is made: the detail changes
 * what the model sees, so two details are two cache entries.
 */
export function withImageDetail(messages: ChatMessage[], detail: "auto" | "low" | "high"): ChatMessage[] {
  if (detail === "auto") return messages;
  return messages.map((m) =>
    typeof m.content === "string" || !m.content.some((p) => p.type === "image_url")
      ? m
      : { ...m, content: m.content.map((p) => (p.type === "image_url" ? { type: "image_url", image_url: { ...p.image_url, detail } } : p)) },
  );
}

/**
 * LangChain messages for any chat model. Image parts stay LangChain `image_url` content
 * parts, which ChatOpenAI sends as OpenAI `image_url` parts and other chat models translate.
 */
export function toLangChainMessages(messages: ChatMessage[]): BaseMessage[] {
  return messages.map((m) => {
    const content = typeof m.content === "string" ? m.content : m.content.map((p) => ({ ...p }));
    if (m.role === "system") return new SystemMessage({ content });
    if (m.role === "assistant") return new AIMessage({ content });
    return new HumanMessage({ content });
  });
}
