import { createHash } from "node:crypto";
import type { ChatMessage, ContentPart } from "./messages.js";

/**
 * A request may carry at most so many images (vLLM's --limit-mm-per-prompt, 1 by default
 * for many models; Ollama's single image per message). More images than that are composed
 * into that many pictures, side by side, left to right in the order given, with a note in
 * the prompt saying which images each picture joins: every image still reaches the model in
 * one call, so the agent's single answer (ImageDoctor's findings, a rollout, the image
 * check) stays one answer, and no case fails for the limit.
 */

/** Gap between the images of one picture, in pixels (white). */
const GAP = 16;
/** Longest side of a composed picture. */
const MAX_SIDE = 4096;
/** Recently composed pictures (the k rollouts and the checks send the same images). */
const composed = new Map<string, string>();
const MAX_CACHED = 16;

export function imageCount(messages: ChatMessage[]): number {
  let n = 0;
  for (const m of messages) if (typeof m.content !== "string") for (const p of m.content) if (p.type === "image_url") n++;
  return n;
}

function decode(url: string): Buffer {
  const comma = url.indexOf(",");
  return Buffer.from(url.slice(comma + 1), "base64");
}

/** One PNG of the images side by side, at a common height. */
async function sideBySide(urls: string[]): Promise<string> {
  const key = createHash("sha256").update(urls.join("\n")).digest("hex");
  const hit = composed.get(key);
  if (hit) return hit;
  // Loaded with the first picture to compose: a case without images never loads the decoder.
  const { default: sharp } = await import("sharp");
  const metas = await Promise.all(urls.map((u) => sharp(decode(u)).metadata()));
  let height = Math.max(...metas.map((m) => m.height ?? 1));
  const widthAt = (h: number) => metas.reduce((w, m) => w + Math.round(((m.width ?? 1) * h) / (m.height ?? 1)), 0) + GAP * (urls.length - 1);
  while (height > 16 && (widthAt(height) > MAX_SIDE || height > MAX_SIDE)) height = Math.floor(height * 0.8);
  const parts = await Promise.all(urls.map((u) => sharp(decode(u)).resize({ height }).flatten({ background: "#ffffff" }).png().toBuffer({ resolveWithObject: true })));
  let left = 0;
  const layers = parts.map((p) => {
    const layer = { input: p.data, left, top: 0 };
    left += p.info.width + GAP;
    return layer;
  });
  const png = await sharp({ create: { width: Math.max(1, left - GAP), height, channels: 3, background: "#ffffff" } })
    .composite(layers)
    .png()
    .toBuffer();
  const url = `data:image/png;base64,${png.toString("base64")}`;
  if (composed.size >= MAX_CACHED) composed.delete(composed.keys().next().value!);
  composed.set(key, url);
  return url;
}

/** The messages with at most `limit` images: unchanged when they already fit. */
export async function fitImages(messages: ChatMessage[], limit: number | null): Promise<ChatMessage[]> {
  const total = imageCount(messages);
  if (limit === null || total <= limit) return messages;
  if (limit === 0) return withoutImages(messages, total);
  // Groups as even as possible, in order: with a limit of 2, five images go as 3 + 2.
  const sizes = Array.from({ length: limit }, (_, i) => Math.floor(total / limit) + (i < total % limit ? 1 : 0));
  const urls: string[] = [];
  for (const m of messages) if (typeof m.content !== "string") for (const p of m.content) if (p.type === "image_url") urls.push(p.image_url.url);
  const groups: Array<{ first: number; last: number; url: string }> = [];
  let start = 0;
  for (const size of sizes) {
    const slice = urls.slice(start, start + size);
    groups.push({ first: start + 1, last: start + size, url: size === 1 ? slice[0]! : await sideBySide(slice) });
    start += size;
  }
  let index = 0;
  let group = 0;
  return messages.map((m) => {
    if (typeof m.content === "string") return m;
    const content: ContentPart[] = [];
    for (const p of m.content) {
      if (p.type !== "image_url") {
        content.push(p);
        continue;
      }
      index++;
      const g = groups[group]!;
      if (index !== g.first) {
        if (index === g.last) group++;
        continue;
      }
      if (g.first !== g.last)
        content.push({ type: "text", text: `[The next picture shows images ${g.first} to ${g.last} of ${total} side by side, left to right, separated by white gaps: this server takes at most ${limit} picture(s) per request.]` });
      content.push({ type: "image_url", image_url: { ...p.image_url, url: g.url } });
      if (index === g.last) group++;
    }
    return { ...m, content };
  });
}

/**
 * The messages without their images, for a model that takes none (`imagesPerRequest: 0`: a
 * text-only model). The prompt says so where the images were, so the model does not reason as
 * if it saw them; provenance names the model's limit (LlmClient.modelBehaviour).
 */
function withoutImages(messages: ChatMessage[], total: number): ChatMessage[] {
  let noted = false;
  return messages.map((m) => {
    if (typeof m.content === "string" || !m.content.some((p) => p.type === "image_url")) return m;
    const content: ContentPart[] = [];
    for (const p of m.content) {
      if (p.type !== "image_url") content.push(p);
      else if (!noted) {
        noted = true;
        content.push({ type: "text", text: `[${total} image(s) of this case are not shown: this model takes no images. Use only the findings the text states.]` });
      }
    }
    return { ...m, content };
  });
}
