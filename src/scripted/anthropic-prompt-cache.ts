/**
 * Anthropic's prompt cache, simulated as its documentation describes it: only prefixes a
 * request marks with `cache_control` are cached; a prefix runs through tools, then system,
 * then messages, in that order, and ends at the marked block; at most four breakpoints a
 * request; a prefix shorter than the model's minimum is not cached even when marked; an
 * entry lives 5 minutes (or 1 hour with `ttl: "1h"`), refreshed whenever it is read. The
 * usage block then splits the prompt into `cache_read_input_tokens` (the longest marked
 * prefix found), `cache_creation_input_tokens` (what this request wrote beyond it) and
 * `input_tokens` (the rest). Tokens are the scripted server's four characters a token, over
 * text, tool definitions and tool calls; an image's bytes are part of the prefix (a different
 * image ends it) but, as in the scripted chat route, not counted. Anthropic also looks back
 * up to 20 blocks before a breakpoint for an earlier hit; the prompts medmmv sends mark every
 * boundary they share, so that is not simulated.
 */
import { createHash } from "node:crypto";
import { isRecord } from "../core/contracts/is-record.js";

export const MAX_CACHE_BREAKPOINTS = 4;
const FIVE_MINUTES_MS = 5 * 60_000;
const ONE_HOUR_MS = 60 * 60_000;

/** The documented minimum cacheable prompt per model family (tokens). */
export function minimumCacheableTokens(model: string): number {
  if (/opus-4-[56]|haiku-4-5/.test(model)) return 4096;
  if (/sonnet-4-6|haiku-3|3-5-haiku|3-haiku/.test(model)) return 2048;
  return 1024;
}

interface Block {
  /** What identifies it in a prefix. */
  key: string;
  /** Characters counted as prompt tokens. */
  chars: number;
  breakpoint: null | { ttlMs: number };
}

function breakpointOf(block: Record<string, unknown>): Block["breakpoint"] {
  const cc = block.cache_control;
  if (!isRecord(cc) || cc.type !== "ephemeral") return null;
  return { ttlMs: cc.ttl === "1h" ? ONE_HOUR_MS : FIVE_MINUTES_MS };
}

function contentBlocks(content: unknown): Block[] {
  if (typeof content === "string") return [{ key: content, chars: content.length, breakpoint: null }];
  if (!Array.isArray(content)) return [];
  return content.filter(isRecord).map((b) => {
    if (b.type === "text" && typeof b.text === "string") return { key: b.text, chars: b.text.length, breakpoint: breakpointOf(b) };
    if (b.type === "image" && isRecord(b.source)) return { key: `\u0002${JSON.stringify(b.source)}\u0002`, chars: 0, breakpoint: breakpointOf(b) };
    const { cache_control: _cc, ...rest } = b;
    const json = JSON.stringify(rest);
    return { key: json, chars: json.length, breakpoint: breakpointOf(b) };
  });
}

/** A Messages request as the ordered blocks of its prompt: tools, system, messages. */
export function promptBlocks(body: Record<string, unknown>): Block[] {
  const blocks: Block[] = [];
  // tool_choice is part of what a cached prefix depends on (changing it invalidates the cache).
  blocks.push({ key: `\u0001tool_choice:${JSON.stringify(body.tool_choice ?? null)}`, chars: 0, breakpoint: null });
  for (const tool of Array.isArray(body.tools) ? body.tools.filter(isRecord) : []) {
    const { cache_control: _cc, ...rest } = tool;
    const json = JSON.stringify(rest);
    blocks.push({ key: json, chars: json.length, breakpoint: breakpointOf(tool) });
  }
  blocks.push({ key: "\u0001system", chars: 0, breakpoint: null });
  blocks.push(...contentBlocks(body.system));
  for (const m of Array.isArray(body.messages) ? body.messages.filter(isRecord) : []) {
    blocks.push({ key: `\u0001${String(m.role)}`, chars: 0, breakpoint: null });
    blocks.push(...contentBlocks(m.content));
  }
  return blocks;
}

export function countBreakpoints(body: Record<string, unknown>): number {
  return promptBlocks(body).filter((b) => b.breakpoint !== null).length;
}

export interface CacheUsage {
  inputTokens: number;
  cacheReadTokens: number;
  cacheCreationTokens: number;
}

export class AnthropicPromptCache {
  private entries = new Map<string, { expiresAt: number; tokens: number }>();

  constructor(private readonly now: () => number = Date.now) {}

  /** The usage split of one request (and what it writes to the cache). */
  use(model: string, body: Record<string, unknown>): CacheUsage {
    const now = this.now();
    for (const [k, e] of this.entries) if (e.expiresAt <= now) this.entries.delete(k);
    const blocks = promptBlocks(body);
    const hash = createHash("sha256");
    hash.update(model);
    let chars = 0;
    const marks: Array<{ key: string; tokens: number; ttlMs: number }> = [];
    for (const b of blocks) {
      hash.update(`\u0000${b.key}`);
      chars += b.chars;
      if (b.breakpoint) marks.push({ key: hash.copy().digest("hex"), tokens: Math.ceil(chars / 4), ttlMs: b.breakpoint.ttlMs });
    }
    const total = Math.ceil(chars / 4);
    const minimum = minimumCacheableTokens(model);
    let read = 0;
    let readAt = -1;
    for (let i = marks.length - 1; i >= 0; i--) {
      const hit = this.entries.get(marks[i]!.key);
      if (hit) {
        read = hit.tokens;
        readAt = i;
        hit.expiresAt = now + marks[i]!.ttlMs;
        break;
      }
    }
    let written = read;
    for (const m of marks.slice(readAt + 1)) {
      if (m.tokens < minimum) continue;
      this.entries.set(m.key, { expiresAt: now + m.ttlMs, tokens: m.tokens });
      written = Math.max(written, m.tokens);
    }
    const creation = written - read;
    return { inputTokens: total - read - creation, cacheReadTokens: read, cacheCreationTokens: creation };
  }

  reset(): void {
    this.entries = new Map();
  }
}
