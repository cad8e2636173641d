/**
 * A provider's prompt cache, simulated from the prompts the scripted server received, the
 * way OpenAI describes its automatic caching: a prompt of at least `minPromptTokens` tokens
 * is served from the cache for the longest prefix an earlier request (since the last reset)
 * already sent, counted in whole blocks of `blockTokens`; the reply says how many in
 * `usage.prompt_tokens_details.cached_tokens`. A prefix is a prefix of the whole request:
 * messages in order, with their roles, text parts and images (an image's bytes are part of
 * it, so a different image ends it). Tokens are the scripted server's estimate of four
 * characters a token, over text only, as its `prompt_tokens` are.
 */
export interface PromptCacheOptions {
  /** Shorter prompts are never cached (OpenAI: 1024). */
  minPromptTokens?: number;
  /** Cached tokens come in multiples of this (OpenAI: 128). */
  blockTokens?: number;
  /** Earlier prompts kept for matching; the oldest go first (bounds memory and time). */
  maxEntries?: number;
}

type Segment = { text: string; counted: boolean };

/** The request as one sequence of segments: role markers and image URLs are matched but not counted as prompt text. */
export function promptSegments(messages: unknown[]): Segment[] {
  const out: Segment[] = [];
  for (const m of messages) {
    if (typeof m !== "object" || m === null) continue;
    const { role, content } = m as { role?: unknown; content?: unknown };
    out.push({ text: `\u0001${String(role)}\u0001`, counted: false });
    if (typeof content === "string") out.push({ text: content, counted: true });
    else if (Array.isArray(content))
      for (const p of content as Array<{ type?: unknown; text?: unknown; image_url?: unknown }>) {
        if (p?.type === "text" && typeof p.text === "string") out.push({ text: p.text, counted: true });
        else if (p?.type === "image_url") {
          const iu = p.image_url as { url?: unknown; detail?: unknown } | string | undefined;
          const url = typeof iu === "string" ? iu : `${String(iu?.url)}|${String(iu?.detail ?? "")}`;
          out.push({ text: `\u0002${url}\u0002`, counted: false });
        }
      }
  }
  return out;
}

/** Characters two texts share from their start. */
export function commonPrefix(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

export class SimulatedPromptCache {
  private readonly minPromptTokens: number;
  private readonly blockTokens: number;
  private readonly maxEntries: number;
  private sent: string[] = [];

  constructor(opts: PromptCacheOptions = {}) {
    this.minPromptTokens = opts.minPromptTokens ?? 1024;
    this.blockTokens = opts.blockTokens ?? 128;
    this.maxEntries = opts.maxEntries ?? 512;
  }

  /** The cached tokens of a request of `promptTokens` tokens (whole tokens of four characters inside the shared prefix), then remember it. */
  lookup(messages: unknown[], promptTokens: number): number {
    const segments = promptSegments(messages);
    const joined = segments.map((s) => s.text).join("");
    let shared = 0;
    for (const earlier of this.sent) shared = Math.max(shared, commonPrefix(joined, earlier));
    this.sent.push(joined);
    if (this.sent.length > this.maxEntries) this.sent.shift();
    if (promptTokens < this.minPromptTokens) return 0;
    // Only prompt text inside the shared prefix counts, as prompt_tokens counts only text.
    let chars = 0;
    let at = 0;
    for (const s of segments) {
      if (at >= shared) break;
      const inside = Math.min(s.text.length, shared - at);
      if (s.counted) chars += inside;
      at += s.text.length;
    }
    const cached = Math.min(promptTokens, Math.floor(chars / 4));
    return Math.floor(cached / this.blockTokens) * this.blockTokens;
  }

  reset(): void {
    this.sent = [];
  }
}
