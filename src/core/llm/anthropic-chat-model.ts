import { ChatAnthropic } from "@langchain/anthropic";
import type { CallbackManagerForLLMRun } from "@langchain/core/callbacks/manager";
import { HumanMessage, SystemMessage, type BaseMessage, type MessageContent } from "@langchain/core/messages";
import type { ChatResult } from "@langchain/core/outputs";
import { CASE_END, EVIDENCE_END, SCHEMA_LEAD } from "./prompt-layout.js";

/**
 * Anthropic caches only what a request marks: a `cache_control` breakpoint ends a prefix
 * (tools · system · messages) that a later request within the cache's lifetime (5 minutes,
 * refreshed on every hit) reads at a tenth of the price. Our prompts are laid out so that the
 * calls of a case share their start (agents/agent-context.ts: system · case block · evidence
 * graph · agent task · schema · images · variable part); the breakpoints go at the ends of
 * those shared parts, at most the four a request may carry:
 *   1. the system message (the same for every call of every case);
 *   2. the end of the case block (every call of the case);
 *   3. the end of the evidence block, where there is one (the planner, fact-checks, repairs);
 *   4. the end of the schema line (an agent's calls of the case: the k rollouts differ only
 *      after it; with images, that is where the text before them ends).
 * A marked prefix shorter than the model's minimum is simply not cached (Anthropic's rule),
 * so a breakpoint costs nothing where it does not pay. The text is split, never changed: the
 * model reads the same characters. The tools (the reply's schema, under function calling)
 * come first in the prefix, so the cache is shared by the calls of one agent.
 */
const EPHEMERAL = { type: "ephemeral" } as const;

type TextBlock = { type: "text"; text: string; cache_control?: typeof EPHEMERAL };

/**
 * Where each shared part of a prompt's text ends (ascending; at most three). The evidence
 * block counts only before the schema: after it, an evidence fence belongs to what varies
 * per call (the fact pair a search analysis reads).
 */
function sharedEnds(text: string): number[] {
  const ends: number[] = [];
  const caseAt = text.indexOf(CASE_END);
  const from = caseAt < 0 ? 0 : caseAt + CASE_END.length;
  if (caseAt >= 0) ends.push(from);
  const lead = text.indexOf(SCHEMA_LEAD, from);
  const evidenceAt = text.indexOf(EVIDENCE_END, from);
  if (evidenceAt >= 0 && (lead < 0 || evidenceAt < lead)) ends.push(evidenceAt + EVIDENCE_END.length);
  if (lead >= 0) {
    const lineEnd = text.indexOf("\n", lead + SCHEMA_LEAD.length);
    ends.push(lineEnd < 0 ? text.length : lineEnd);
  }
  return ends;
}

/** `text` cut at the ends of its shared parts, each marked for caching; the rest after them unmarked. */
function splitAtSharedEnds(text: string): TextBlock[] {
  const blocks: TextBlock[] = [];
  let from = 0;
  for (const end of sharedEnds(text)) {
    if (end <= from) continue;
    blocks.push({ type: "text", text: text.slice(from, end), cache_control: EPHEMERAL });
    from = end;
  }
  if (from < text.length) blocks.push({ type: "text", text: text.slice(from) });
  return blocks;
}

/** The prompt with Anthropic cache breakpoints on its shared prefix (see above); other messages (re-asks) as they are. */
export function withCacheBreakpoints(messages: BaseMessage[]): BaseMessage[] {
  const firstUser = messages.findIndex((m) => m.getType() === "human");
  return messages.map((m, i) => {
    if (i === 0 && m.getType() === "system" && typeof m.content === "string" && m.content)
      return new SystemMessage({ content: [{ type: "text", text: m.content, cache_control: EPHEMERAL }] });
    if (i !== firstUser) return m;
    const content = m.content;
    if (typeof content === "string") return new HumanMessage({ content: splitAtSharedEnds(content) as MessageContent });
    // With images, the shared part is the text before them; later text parts vary per call.
    const parts = content as Array<{ type?: string; text?: string }>;
    const out = parts.flatMap((p, j) => (j === 0 && p.type === "text" && typeof p.text === "string" ? splitAtSharedEnds(p.text) : [p]));
    return new HumanMessage({ content: out as MessageContent });
  });
}

/** ChatAnthropic with cache breakpoints on every prompt it sends (the wire request is otherwise LangChain's own). */
export class CachingChatAnthropic extends ChatAnthropic {
  override async _generate(messages: BaseMessage[], options: this["ParsedCallOptions"], runManager?: CallbackManagerForLLMRun): Promise<ChatResult> {
    return super._generate(withCacheBreakpoints(messages), options, runManager);
  }
}
