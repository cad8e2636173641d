import { unpricedModels, type Config } from "../core/config.js";
import { MedmmvError } from "../core/contracts/errors.js";

/**
 * `medmmv eval --max-cost USD` / `--max-tokens N`: the run's spending limit. New items are
 * started only while what was spent plus what the items in flight are expected to spend
 * stays under it; items already running finish and are recorded, so `--resume` (with a
 * larger limit, or none) continues from there to the result an uninterrupted run gives.
 * The limit is the run folder's: records kept from an earlier session count as spent.
 * What an item in flight will spend is the mean of the items finished so far; until one has
 * finished nothing is known, so only one item runs at a time.
 */
export interface RunLimits {
  maxCostUsd?: number;
  maxTokens?: number;
}

export interface ItemSpend {
  tokens: number;
  costUsd: number;
}

export type Admission = "start" | "wait" | "stop";

export class RunBudget {
  private spent: ItemSpend;
  private finished: number;
  private inFlight = 0;
  /** Set once an item was refused for the budget. */
  stopped = false;

  constructor(
    private readonly limits: RunLimits,
    earlier: ItemSpend[],
  ) {
    this.spent = earlier.reduce((a, s) => ({ tokens: a.tokens + s.tokens, costUsd: a.costUsd + s.costUsd }), { tokens: 0, costUsd: 0 });
    this.finished = earlier.length;
  }

  get active(): boolean {
    return this.limits.maxCostUsd !== undefined || this.limits.maxTokens !== undefined;
  }

  /** Whether the next item may start now, must wait for one in flight to finish, or not start at all. */
  admit(): Admission {
    if (!this.active) return "start";
    if (this.over(0)) return this.refuse();
    if (this.finished === 0) return this.inFlight === 0 ? "start" : "wait";
    // The item about to start counts as in flight too.
    return this.over(this.inFlight + 1) ? (this.inFlight > 0 ? "wait" : this.refuse()) : "start";
  }

  started(): void {
    this.inFlight++;
  }

  /** An item ended (recorded or not); `spend` is what it cost, null when it was dropped unrecorded. */
  ended(spend: ItemSpend | null): void {
    this.inFlight--;
    if (!spend) return;
    this.spent = { tokens: this.spent.tokens + spend.tokens, costUsd: this.spent.costUsd + spend.costUsd };
    this.finished++;
  }

  total(): ItemSpend {
    return { ...this.spent };
  }

  private refuse(): Admission {
    this.stopped = true;
    return "stop";
  }

  /** Spent plus `items` more at the mean so far reaches a limit. */
  private over(items: number): boolean {
    const mean = (x: number) => (this.finished > 0 ? x / this.finished : 0);
    const cost = this.spent.costUsd + items * mean(this.spent.costUsd);
    const tokens = this.spent.tokens + items * mean(this.spent.tokens);
    return (this.limits.maxCostUsd !== undefined && cost >= this.limits.maxCostUsd) || (this.limits.maxTokens !== undefined && tokens >= this.limits.maxTokens);
  }
}

/**
 * `--max-cost` needs a price for every model the run can call — the pipeline's roles and the
 * models the run adds (`--raters`, a rubric grader): an unpriced call counts $0, so the limit
 * would silently never be reached. Checked before the run folder is claimed or any call made.
 */
export function assertRunPriced(config: Config, maxCostUsd: number | undefined, extraModels: readonly string[]): void {
  if (maxCostUsd === undefined) return;
  const roles = Object.values(config.llm.models);
  const unpriced = unpricedModels([...roles, ...extraModels], config.llm.prices);
  if (!unpriced.length) return;
  const named = unpriced.map((m) => (roles.includes(m) ? m : `${m} (a rater or grader)`));
  throw new MedmmvError("INVALID_INPUT", `--max-cost needs a price for every model the run calls; none for ${named.join(", ")}: set MEDMMV_PRICES or MEDMMV_PRICES_FILE, or use --max-tokens`);
}
