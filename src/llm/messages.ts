/** Provider-neutral chat messages; images go as OpenAI `image_url` parts with data URLs. */
export type ContentPart = { type: "text"; text: string } | { type: "image_url"; image_url: { url: string } };
export interface ChatMessage {
  role: "system" | "user" | "assistant";
  content: string | ContentPart[];
}

/**
 * Marks an image URL whose text needs no JSON escaping (a MIME type and canonical base64),
 * so the request encoder may copy it in as bytes instead of scanning it (openai-chat.ts).
 * A symbol key: invisible to JSON.stringify, the cache key and every other reader.
 */
export const JSON_SAFE_URL = Symbol("medmmv.jsonSafeUrl");

/** An image part. `base64` must be canonical base64 (as Buffer#toString("base64") writes it). */
export function imagePart(mimeType: string, base64: string): ContentPart {
  const image_url = { url: `data:${mimeType};base64,${base64}` };
  Object.defineProperty(image_url, JSON_SAFE_URL, { value: true });
  return { type: "image_url", image_url };
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
