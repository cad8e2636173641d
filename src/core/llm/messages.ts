import { AIMessage, HumanMessage, SystemMessage, type BaseMessage } from "@langchain/core/messages";

/** Provider-neutral chat messages; images go as OpenAI `image_url` parts with data URLs. */
export type ContentPart = { type: "text"; text: string } | { type: "image_url"; image_url: { url: string } };
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
