import type { Prices } from "../config.js";
import { priceOf } from "./model-spec.js";
import type { Usage } from "../contracts/diagnosis-result.js";

/**
 * Per-case accounting of model and search calls, by agent. Token counts come from the
 * provider's `usage` field; a reply without one is counted by a tokenizer estimate
 * (token-estimate.ts) and marked estimated. A cost is the provider's own (`usage.cost`,
 * OpenRouter) where it states one, else priced from the price table; a call with neither is
 * counted as unpriced, never as free.
 */
export interface CallRecord {
  agent: string;
  model?: string;
  promptTokens?: number;
  completionTokens?: number;
  latencyMs: number;
  cacheHit?: boolean;
  failed?: boolean;
  promptChars?: number;
  /** Prompt tokens the provider served from its prompt cache (part of promptTokens). */
  cachedPromptTokens?: number;
  imageBytes?: number;
  /** Prompt tokens the provider says the images took (part of promptTokens), where it says so. */
  imageTokens?: number;
  /** Completion tokens the model spent reasoning (part of completionTokens, billed at the output rate). */
  reasoningTokens?: number;
  /** The token counts are a tokenizer's estimate: the reply stated no usage. */
  estimated?: boolean;
  /** What the provider says the call cost, in USD (OpenRouter's usage.cost): it wins over the price table. */
  providerCostUsd?: number;
  /**
   * The price the call was resolved to (call-route.ts; null: unpriced): read instead of looking
   * the model up in the meter's table. Unset: the table's price for `model`.
   */
  price?: Prices[string] | null;
  kind: "llm" | "search";
}

/**
 * The dollars of one call: uncached prompt tokens at `input`, cached ones at `cachedInput`
 * (at `input` where the table has no cached rate), completion tokens at `output`; prices are
 * USD per million tokens. 0 for a model without prices (the meter counts such a call as unpriced).
 */
export function callCostUsd(price: Prices[string] | undefined, promptTokens: number, cachedPromptTokens: number, completionTokens: number): number {
  if (!price) return 0;
  const cached = Math.min(cachedPromptTokens, promptTokens);
  return ((promptTokens - cached) * price.input + cached * (price.cachedInput ?? price.input) + completionTokens * price.output) / 1_000_000;
}

/** Models whose impossible cached-token figure was already reported (once per model and process). */
const reportedCached = new Set<string>();

/**
 * The provider's cached-prompt-token figure when it can be true: a whole number in [0, prompt
 * tokens]. Anything else is refused — counted as 0 cached, so the call is priced at the full
 * input rate (never below what it cost) — and reported once per model as a process warning
 * (code MEDMMV_USAGE_REFUSED; numbers and the model only, no content).
 */
function plausibleCachedTokens(r: CallRecord, promptTokens: number): number {
  const c = r.cachedPromptTokens;
  if (c === undefined) return 0;
  if (Number.isInteger(c) && c >= 0 && c <= promptTokens) return c;
  const model = r.model ?? "unknown model";
  if (!reportedCached.has(model)) {
    reportedCached.add(model);
    process.emitWarning(`${model} reported ${c} cached prompt tokens for a call of ${promptTokens} prompt tokens (agent ${r.agent}); outside [0, ${promptTokens}], counted as 0`, { code: "MEDMMV_USAGE_REFUSED" });
  }
  return 0;
}

type AgentTotals = Usage["byAgent"][string] & { promptChars?: number };

function emptyAgent(): AgentTotals {
  return { calls: 0, promptTokens: 0, completionTokens: 0, cachedPromptTokens: 0, costUsd: 0, latencyMs: 0, failures: 0, cacheHits: 0, promptChars: 0, imageBytes: 0, imageTokens: 0, reasoningTokens: 0, unpricedCalls: 0, estimatedCalls: 0 };
}

export class UsageMeter {
  private readonly byAgent: Record<string, AgentTotals> = {};
  private llmCalls = 0;
  private searchCalls = 0;
  private promptTokens = 0;
  private cachedPromptTokens = 0;
  private completionTokens = 0;
  private imageBytes = 0;
  private imageTokens = 0;
  private reasoningTokens = 0;
  private costUsd = 0;
  private unpricedCalls = 0;
  private estimatedCalls = 0;
  private cacheHits = 0;
  private longestChain = 0;

  /**
   * `onSpend`: told the tokens and dollars of every provider call as it is recorded (the
   * case's budget counts calls of all its branches as they happen).
   */
  constructor(
    private readonly prices: Prices = {},
    private readonly onSpend?: (tokens: number, costUsd: number) => void,
  ) {}

  record(r: CallRecord): void {
    const a = (this.byAgent[r.agent] ??= emptyAgent());
    if (r.cacheHit) {
      a.cacheHits! += 1;
      this.cacheHits++;
      return; // a cache hit costs nothing and is not a provider call
    }
    a.calls += 1;
    a.latencyMs! += r.latencyMs;
    a.promptChars! += r.promptChars ?? 0;
    a.imageBytes! += r.imageBytes ?? 0;
    this.imageBytes += r.imageBytes ?? 0;
    if (r.failed) a.failures! += 1;
    if (r.kind === "search") {
      this.searchCalls++;
      return;
    }
    this.llmCalls++;
    const pt = r.promptTokens ?? 0;
    const ct = r.completionTokens ?? 0;
    const cached = plausibleCachedTokens(r, pt);
    a.promptTokens! += pt;
    a.completionTokens! += ct;
    a.cachedPromptTokens! += cached;
    const imageTokens = Math.min(r.imageTokens ?? 0, pt);
    a.imageTokens! += imageTokens;
    this.imageTokens += imageTokens;
    const reasoning = Math.min(r.reasoningTokens ?? 0, ct);
    a.reasoningTokens! += reasoning;
    this.reasoningTokens += reasoning;
    this.promptTokens += pt;
    this.completionTokens += ct;
    this.cachedPromptTokens += cached;
    const price = r.price !== undefined ? (r.price ?? undefined) : r.model ? priceOf(this.prices, r.model) : undefined;
    const cost = r.providerCostUsd ?? callCostUsd(price, pt, cached, ct);
    // A failed call the provider refused states no tokens: it costs nothing to know. Any other without a price is unpriced.
    if (r.providerCostUsd === undefined && !price && pt + ct > 0) {
      a.unpricedCalls! += 1;
      this.unpricedCalls++;
    }
    if (r.estimated) {
      a.estimatedCalls! += 1;
      this.estimatedCalls++;
    }
    a.costUsd! += cost;
    this.costUsd += cost;
    this.onSpend?.(pt + ct, cost);
  }

  /** Depth of the longest chain of dependent calls seen so far (see CallChain). */
  observeChain(depth: number): void {
    if (depth > this.longestChain) this.longestChain = depth;
  }

  /** Fold in a snapshot made by another meter (a resumed branch, a sub-run). */
  absorb(u: Usage): void {
    // The snapshot's total is rounded to 1e-6 USD; its agents' costs are not. Summing rounded
    // totals of many branches (k rollouts, every refined path) would drift from the calls' cost.
    let costUsd = 0;
    let everyAgentPriced = true;
    for (const [agent, t] of Object.entries(u.byAgent)) {
      const a = (this.byAgent[agent] ??= emptyAgent());
      a.calls += t.calls;
      a.promptTokens! += t.promptTokens ?? 0;
      a.completionTokens! += t.completionTokens ?? 0;
      a.costUsd! += t.costUsd ?? 0;
      costUsd += t.costUsd ?? 0;
      if (typeof t.costUsd !== "number") everyAgentPriced = false;
      a.latencyMs! += t.latencyMs ?? 0;
      a.failures! += t.failures ?? 0;
      a.cacheHits! += t.cacheHits ?? 0;
      a.promptChars! += (t as AgentTotals).promptChars ?? 0;
      a.cachedPromptTokens! += t.cachedPromptTokens ?? 0;
      a.imageBytes! += t.imageBytes ?? 0;
      a.imageTokens! += t.imageTokens ?? 0;
      a.reasoningTokens! += t.reasoningTokens ?? 0;
      a.unpricedCalls! += t.unpricedCalls ?? 0;
      a.estimatedCalls! += t.estimatedCalls ?? 0;
    }
    this.llmCalls += u.llmCalls;
    this.searchCalls += u.searchCalls;
    this.promptTokens += u.promptTokens;
    this.completionTokens += u.completionTokens;
    this.cachedPromptTokens += u.cachedPromptTokens ?? 0;
    this.imageBytes += u.imageBytes ?? 0;
    this.imageTokens += u.imageTokens ?? 0;
    this.reasoningTokens += u.reasoningTokens ?? 0;
    this.costUsd += everyAgentPriced ? costUsd : u.costUsd;
    this.cacheHits += u.cacheHits ?? 0;
    this.unpricedCalls += u.unpricedCalls ?? 0;
    this.estimatedCalls += u.estimatedCalls ?? 0;
    this.observeChain(u.criticalPathCalls ?? 0);
  }

  snapshot(wallMs: number): Usage {
    return {
      llmCalls: this.llmCalls,
      searchCalls: this.searchCalls,
      promptTokens: this.promptTokens,
      completionTokens: this.completionTokens,
      costUsd: Number(this.costUsd.toFixed(6)),
      wallMs,
      byAgent: Object.fromEntries(Object.entries(this.byAgent).map(([agent, { unpricedCalls, estimatedCalls, ...t }]) => [agent, { ...t, ...(unpricedCalls ? { unpricedCalls } : {}), ...(estimatedCalls ? { estimatedCalls } : {}) }])),
      cacheHits: this.cacheHits,
      criticalPathCalls: this.longestChain,
      cachedPromptTokens: this.cachedPromptTokens,
      imageBytes: this.imageBytes,
      imageTokens: this.imageTokens,
      reasoningTokens: this.reasoningTokens,
      // Said only when there are some: a priced case with stated usage reads as before.
      ...(this.unpricedCalls ? { unpricedCalls: this.unpricedCalls } : {}),
      ...(this.estimatedCalls ? { estimatedCalls: this.estimatedCalls } : {}),
    };
  }
}

/** Two usages as one (a resumed item's earlier attempt and this one, a method and its judge pass); wall times add. */
export function addUsage(a: Usage, b: Usage): Usage {
  const m = new UsageMeter();
  m.absorb(a);
  m.absorb(b);
  return m.snapshot(a.wallMs + b.wallMs);
}

/**
 * Tracks the length of the chain of dependent calls leading to the current point of a
 * branch. Parallel branches fork from one cursor; a step that waits on several branches
 * starts from the longest of them. The case's critical path is the deepest cursor seen.
 */
export class CallChain {
  constructor(
    private readonly meter: UsageMeter,
    public depth = 0,
  ) {}
  fork(): CallChain {
    return new CallChain(this.meter, this.depth);
  }
  /** Called once per provider call made on this branch. */
  advance(): void {
    this.depth++;
    this.meter.observeChain(this.depth);
  }
  static join(meter: UsageMeter, chains: Array<CallChain | number>): CallChain {
    return new CallChain(meter, Math.max(0, ...chains.map((c) => (typeof c === "number" ? c : c.depth))));
  }
}
