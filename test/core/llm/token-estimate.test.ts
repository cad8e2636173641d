import { describe, expect, it } from "vitest";
import { Tiktoken } from "js-tiktoken/lite";
import ranks from "js-tiktoken/ranks/cl100k_base";
import { estimateTokens } from "../../../src/core/llm/token-estimate.js";

describe("token estimate for replies without usage (counted in a worker thread)", () => {
  it("counts as cl100k_base counts on the main thread", async () => {
    const reference = new Tiktoken(ranks);
    const texts = ["Inferior STEMI", "58-year-old man, crushing chest pain for 40 minutes, ST elevation in II, III, aVF.", "ü ∑ 漢字 🙂\n\n{\"groups\": [[1,3],[2]]}"];
    const counts = await Promise.all(texts.map((t) => estimateTokens(t)));
    expect(counts).toEqual(texts.map((t) => reference.encode(t).length));
  });

  it("an empty text is 0 and a text spelling a special token is counted, not refused", async () => {
    expect(await estimateTokens("")).toBe(0);
    expect(await estimateTokens("before <|endoftext|> after")).toBeGreaterThan(2);
  });
});
