import { describe, expect, it } from "vitest";
import { SimulatedPromptCache } from "../../src/scripted/prompt-cache.js";

const sys = { role: "system", content: "s".repeat(2000) };
const user = (text: string, image?: string) => ({ role: "user", content: image ? [{ type: "text", text }, { type: "image_url", image_url: { url: image } }, { type: "text", text: "tail" }] : text });
const tokens = (messages: Array<{ content: unknown }>) =>
  Math.ceil(messages.reduce((n, m) => n + (typeof m.content === "string" ? m.content.length : (m.content as Array<{ text?: string }>).reduce((k, p) => k + (p.text?.length ?? 0), 0)), 0) / 4);

describe("simulated prompt cache", () => {
  it("serves the longest prefix an earlier request sent, in whole blocks, and nothing the first time", () => {
    const cache = new SimulatedPromptCache({ minPromptTokens: 100, blockTokens: 128 });
    const a = [sys, user("x".repeat(3000) + "first")];
    const b = [sys, user("x".repeat(3000) + "second")];
    expect(cache.lookup(a, tokens(a))).toBe(0);
    // 5000 shared characters = 1250 tokens → 9 blocks of 128.
    expect(cache.lookup(b, tokens(b))).toBe(1152);
  });

  it("prompts under the minimum are never served from the cache", () => {
    const cache = new SimulatedPromptCache({ minPromptTokens: 10_000 });
    const a = [sys, user("same")];
    cache.lookup(a, tokens(a));
    expect(cache.lookup(a, tokens(a))).toBe(0);
  });

  it("an image is part of the prefix: a different image ends it, its bytes are not counted as text", () => {
    const cache = new SimulatedPromptCache({ minPromptTokens: 1, blockTokens: 1 });
    const a = [sys, user("y".repeat(400), "data:image/png;base64,AAAA")];
    const b = [sys, user("y".repeat(400), "data:image/png;base64,BBBB")];
    cache.lookup(a, tokens(a));
    expect(cache.lookup(b, tokens(b))).toBe(600); // system 2000 + 400 text characters
    expect(cache.lookup(a, tokens(a))).toBe(tokens(a)); // the same request again: all of it
  });

  it("reset forgets what was sent", () => {
    const cache = new SimulatedPromptCache({ minPromptTokens: 1, blockTokens: 1 });
    const a = [sys, user("z")];
    cache.lookup(a, tokens(a));
    cache.reset();
    expect(cache.lookup(a, tokens(a))).toBe(0);
  });
});
