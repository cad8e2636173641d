import { describe, expect, it } from "vitest";
import type { BaseMessage } from "@langchain/core/messages";
import { withCacheBreakpoints } from "../../../src/core/llm/anthropic-chat-model.js";
import { toLangChainMessages } from "../../../src/core/llm/messages.js";
import { SCHEMA_LEAD } from "../../../src/core/llm/prompt-layout.js";
import { capturePrompts } from "../agents/prompt-capture.js";

type Block = { type: string; text?: string; cache_control?: unknown };

function blocks(m: BaseMessage): Block[] {
  return typeof m.content === "string" ? [{ type: "text", text: m.content }] : (m.content as Block[]);
}

function textOf(m: BaseMessage): string {
  return blocks(m)
    .map((b) => (b.type === "text" ? b.text : `[${b.type}]`))
    .join("");
}

describe("Anthropic cache breakpoints on every agent's real prompt", async () => {
  const calls = await capturePrompts();

  it("mark the shared prefix without changing a character, within Anthropic's four breakpoints", () => {
    expect(calls.length).toBeGreaterThan(10);
    for (const call of calls) {
      const before = toLangChainMessages(call.messages);
      const after = withCacheBreakpoints(before);
      expect(after.map(textOf), call.label).toEqual(before.map(textOf));
      const marked = after.flatMap(blocks).filter((b) => b.cache_control !== undefined);
      expect(marked.length, call.label).toBeLessThanOrEqual(4);
      for (const b of marked) expect(b.cache_control).toEqual({ type: "ephemeral" });
      // The system message is the first breakpoint; the case block's end is the second.
      expect(blocks(after[0]!)[0]!.cache_control, call.label).toBeDefined();
      const user = blocks(after[1]!);
      expect(user[0]!.text!.endsWith("CASE>>>"), call.label).toBe(true);
      expect(user[0]!.cache_control, call.label).toBeDefined();
    }
  });

  it("the last breakpoint ends the schema line, so an agent's calls share everything before what varies", () => {
    const withSchema = calls.filter((c) => JSON.stringify(c.messages).includes(JSON.stringify(SCHEMA_LEAD).slice(1, -1)));
    expect(withSchema.length).toBeGreaterThan(10);
    for (const call of withSchema) {
      const user = blocks(withCacheBreakpoints(toLangChainMessages(call.messages))[1]!);
      const lastMarked = user.filter((b) => b.cache_control !== undefined).at(-1)!;
      const schemaLine = lastMarked.text!.slice(lastMarked.text!.lastIndexOf("\n") + 1);
      expect(() => JSON.parse(schemaLine), call.label).not.toThrow();
      expect(lastMarked.text!.includes(SCHEMA_LEAD) || user.some((b) => b.text?.endsWith(SCHEMA_LEAD.trimEnd())), call.label).toBe(true);
      // Nothing after it is marked: that is the part that varies per call.
      const after = user.slice(user.indexOf(lastMarked) + 1);
      expect(after.every((b) => b.cache_control === undefined), call.label).toBe(true);
    }
    // The evidence block is a breakpoint of its own where a prompt carries one.
    const sharedEvidence = (t: string) => t.includes("EVIDENCE>>>") && t.indexOf("EVIDENCE>>>") < t.indexOf(SCHEMA_LEAD);
    const withEvidence = withSchema.filter((c) => sharedEvidence(textOf(toLangChainMessages(c.messages)[1]!)));
    expect(withEvidence.length).toBeGreaterThan(0);
    for (const call of withEvidence) {
      const user = blocks(withCacheBreakpoints(toLangChainMessages(call.messages))[1]!);
      expect(user.some((b) => b.cache_control !== undefined && b.text!.endsWith("EVIDENCE>>>")), call.label).toBe(true);
    }
  });

  it("leaves a re-ask (a later user message) unmarked", () => {
    const call = calls.find((c) => c.label.startsWith("rollout"))!;
    const messages = toLangChainMessages([...call.messages, { role: "user", content: "Your previous reply could not be used." }]);
    const after = withCacheBreakpoints(messages);
    expect(after[2]).toBe(messages[2]);
  });
});
