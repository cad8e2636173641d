import { unpricedModels, type Config } from "../config.js";
import { MedmmvError } from "../contracts/errors.js";
import type { Usage } from "../contracts/diagnosis-result.js";

/** A case's budget: tokens (prompt + completion) and dollars; null is no limit. */
export interface CaseBudget {
  maxTokens: number | null;
  maxCostUsd: number | null;
}

/** What a case has spent so far: tokens (prompt + completion) and dollars. */
export interface Spend {
  tokens: number;
  costUsd: number;
}

export function spendOf(usages: Usage[]): Spend {
  let tokens = 0;
  let costUsd = 0;
  for (const u of usages) {
    tokens += u.promptTokens + u.completionTokens;
    costUsd += u.costUsd;
  }
  return { tokens, costUsd };
}

/** A request's limits over the server's defaults, limit by limit. */
export function caseBudgetFor(config: Config, asked: { maxTokens?: number; maxCostUsd?: number }): CaseBudget {
  return { maxTokens: asked.maxTokens ?? config.pipeline.caseBudget.maxTokens, maxCostUsd: asked.maxCostUsd ?? config.pipeline.caseBudget.maxCostUsd };
}

export function budgetReached(budget: CaseBudget | undefined, spent: Spend): boolean {
  if (!budget) return false;
  return (budget.maxTokens !== null && spent.tokens >= budget.maxTokens) || (budget.maxCostUsd !== null && spent.costUsd >= budget.maxCostUsd);
}

/**
 * A dollar budget needs a price for every model the case can call: without one, its calls
 * cost 0 and the budget would never be reached (a silent no-limit).
 */
export function assertBudgetPriced(config: Config, budget: CaseBudget): void {
  if (budget.maxCostUsd === null) return;
  const unpriced = unpricedModels([...Object.values(config.llm.models), ...config.llm.rolloutModels], config.llm.prices);
  if (unpriced.length)
    throw new MedmmvError("INVALID_INPUT", `a cost budget (maxCostUsd) needs prices for ${unpriced.join(", ")}: set MEDMMV_PRICES or MEDMMV_PRICES_FILE, or give maxTokens instead`);
}

/**
 * What the refine branches of each running case have spent, as their calls happen: the
 * branches run in parallel, and each must see the others' spending before it repairs again.
 * In memory like the run hooks (not data). A resumed case counts again from the spending its
 * checkpoint carries (rollouts and evidence); refine branches that finished before the
 * interruption are not counted again, so a resumed case can overshoot its budget by them.
 */
export class CaseSpending {
  private readonly byCase = new Map<string, Spend>();
  open(caseId: string): void {
    this.byCase.set(caseId, { tokens: 0, costUsd: 0 });
  }
  close(caseId: string): void {
    this.byCase.delete(caseId);
  }
  add(caseId: string, tokens: number, costUsd: number): void {
    const s = this.byCase.get(caseId);
    if (!s) return;
    s.tokens += tokens;
    s.costUsd += costUsd;
  }
  get(caseId: string): Spend {
    return this.byCase.get(caseId) ?? { tokens: 0, costUsd: 0 };
  }
}
