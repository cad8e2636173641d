import type { Prices } from "../../core/config.js";
import type { AgentDeps } from "../../core/agents/agent-context.js";
import { MedmmvError } from "../../core/contracts/errors.js";
import { CallChain, UsageMeter } from "../../core/llm/usage.js";
import { casePathway } from "../../core/pathways/path-conflict.js";
import type { CaseScope, CaseService } from "../service/case-service.js";
import { rebuildPreparedCase } from "../service/stored-case.js";
import type { CaseRecords, ConversationTurn, ConversationTurns } from "../store/case-store.js";
import { answerTurn, checkRequestedStep, turnEvidence, type TurnRequest } from "../../core/conversation/answer-turn.js";

export interface ConversationServiceDeps {
  /** Turns, and the case images a turn re-reads. */
  store: ConversationTurns & Pick<CaseRecords, "getImage">;
  cases: CaseService;
  agents: AgentDeps;
  prices: Prices;
}

/**
 * Conversations on finished cases, stored with the case (so they survive a restart and
 * go when the case is purged). Same ownership rule as cases: another key's case is 404.
 * Turns of one case are answered one at a time, since each builds on the ones before;
 * across processes the store's turn key refuses a second turn with the same number.
 */
export class ConversationService {
  readonly #deps: ConversationServiceDeps;
  readonly #queues = new Map<string, Promise<unknown>>();

  constructor(deps: ConversationServiceDeps) {
    this.#deps = deps;
  }

  async list(scope: CaseScope, caseId: string): Promise<ConversationTurn[]> {
    await this.#deps.cases.get(scope, caseId);
    return this.#deps.store.listTurns(caseId);
  }

  async ask(scope: CaseScope, caseId: string, request: TurnRequest): Promise<ConversationTurn> {
    const record = await this.#deps.cases.get(scope, caseId);
    if (record.status === "queued" || record.status === "running")
      throw new MedmmvError("CONFLICT", `case ${caseId} is still ${record.status}; ask once it has finished (GET /cases/${caseId})`, { details: { status: record.status } });
    if (record.status === "failed") throw new MedmmvError("CONFLICT", `case ${caseId} failed, so there is no result to talk about; submit it again`, { details: { status: record.status } });
    checkRequestedStep(casePathway(record.input.pathway), request.step);
    const prior = this.#queues.get(caseId) ?? Promise.resolve();
    const next = prior.catch(() => undefined).then(async () => {
      const store = this.#deps.store;
      const history = await store.listTurns(caseId);
      const c = await rebuildPreparedCase(record, store);
      const meter = new UsageMeter(this.#deps.prices);
      const started = Date.now();
      const turn = await answerTurn(this.#deps.agents, { caseKey: caseId, meter, chain: new CallChain(meter, 0), cacheScope: `owner:${record.owner}` }, {
        case: c,
        ...(c.pathway ? { pathway: casePathway(c.pathway)! } : {}),
        evidence: turnEvidence(record.fullEvidenceGraph),
        history,
        request,
      });
      const usage = meter.snapshot(Date.now() - started);
      return store.addTurn(caseId, { ...turn, details: { ...turn.details, usage: { llmCalls: usage.llmCalls, promptTokens: usage.promptTokens, completionTokens: usage.completionTokens, costUsd: usage.costUsd, wallMs: usage.wallMs } } });
    });
    this.#queues.set(caseId, next);
    try {
      return await next;
    } finally {
      if (this.#queues.get(caseId) === next) this.#queues.delete(caseId);
    }
  }
}
