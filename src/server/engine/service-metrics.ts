import { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import type { LLMResult } from "@langchain/core/outputs";
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { DiagnosisResult } from "../../core/contracts/diagnosis-result.js";
import type { CaseRecords } from "../store/case-store.js";
import type { CaseEngine } from "./case-engine.js";

/**
 * What operators read at GET /metrics (Prometheus text format, prom-client). Labels are
 * closed sets chosen here — route templates, statuses, agent, role and model names — never a
 * case id, a key, or anything a client wrote, so no label can carry patient data (a test
 * checks it). One registry per server, so several servers in one test process stay apart.
 */
export class ServiceMetrics {
  readonly registry = new Registry();
  readonly httpRequests = new Counter({ name: "medmmv_http_requests_total", help: "HTTP requests by route template, method and status", labelNames: ["method", "route", "status"] as const, registers: [this.registry] });
  readonly httpDuration = new Histogram({ name: "medmmv_http_request_duration_seconds", help: "HTTP request latency by route template", labelNames: ["method", "route"] as const, buckets: [0.005, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30], registers: [this.registry] });
  readonly casesAccepted = new Counter({ name: "medmmv_cases_accepted_total", help: "Cases accepted by this replica", registers: [this.registry] });
  readonly casesFinished = new Counter({ name: "medmmv_cases_finished_total", help: "Cases this replica finished, by final status", labelNames: ["status"] as const, registers: [this.registry] });
  readonly casesQuarantined = new Counter({ name: "medmmv_cases_quarantined_total", help: "Cases failed with RUN_CRASHED (their run started too often without finishing)", registers: [this.registry] });
  readonly queueWait = new Histogram({ name: "medmmv_case_queue_seconds", help: "Time from a case's acceptance to the first start of its run", buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300, 1800], registers: [this.registry] });
  readonly caseSeconds = new Histogram({ name: "medmmv_case_run_seconds", help: "Wall time of a case's run on this replica, by final status", labelNames: ["status"] as const, buckets: [0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900], registers: [this.registry] });
  readonly repairsPerCase = new Histogram({ name: "medmmv_case_repairs", help: "AutoRepair rounds per finished case (all paths together)", buckets: [0, 1, 2, 3, 5, 8, 13, 21], registers: [this.registry] });
  readonly abstentions = new Counter({ name: "medmmv_case_abstentions_total", help: "Cases that ended in an abstention", registers: [this.registry] });
  readonly searches = new Counter({ name: "medmmv_search_calls_total", help: "Literature searches made by finished cases", registers: [this.registry] });
  readonly modelCalls = new Counter({ name: "medmmv_model_calls_total", help: "Model calls by agent, role, model and outcome (ok, error, rate_limited)", labelNames: ["agent", "role", "model", "outcome"] as const, registers: [this.registry] });
  readonly modelLatency = new Histogram({ name: "medmmv_model_call_seconds", help: "Model call latency by role and model", labelNames: ["role", "model"] as const, buckets: [0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32, 64, 120], registers: [this.registry] });
  readonly tokens = new Counter({ name: "medmmv_model_tokens_total", help: "Tokens by kind (prompt, completion, cached), role and model", labelNames: ["kind", "role", "model"] as const, registers: [this.registry] });

  readonly cardFeedback = new Counter({ name: "medmmv_cds_card_feedback_total", help: "CDS Hooks feedback on result cards, by outcome (accepted, overridden) and the card's indicator (info, warning)", labelNames: ["outcome", "indicator"] as const, registers: [this.registry] });

  constructor(sources: { store: Pick<CaseRecords, "countCasesByStatus">; engine: () => CaseEngine | null }) {
    collectDefaultMetrics({ register: this.registry, prefix: "medmmv_process_" });
    new Gauge({
      name: "medmmv_cases",
      help: "Cases in the store by status (every replica's)",
      labelNames: ["status"] as const,
      registers: [this.registry],
      async collect() {
        const counts = await sources.store.countCasesByStatus();
        for (const [status, n] of Object.entries(counts)) this.set({ status }, n);
      },
    });
    new Gauge({
      name: "medmmv_queue_jobs",
      help: "Case jobs in the engine's queue by state (waiting, active, delayed, failed; stalled: how many this replica found stalled since it started)",
      labelNames: ["state"] as const,
      registers: [this.registry],
      async collect() {
        const engine = sources.engine();
        if (!engine) return;
        const counts = await engine.counts();
        for (const [state, n] of Object.entries(counts)) this.set({ state }, n);
      },
    });
  }

  /** One HTTP request, under label values from closed lists (httpLabels). */
  recordRequest(method: string, route: string | undefined, status: number, seconds: number): void {
    const l = httpLabels(method, route, status);
    this.httpRequests.inc(l);
    this.httpDuration.observe({ method: l.method, route: l.route }, seconds);
  }

  /** A finished case's figures (its usage summary, not its content). */
  recordFinished(result: DiagnosisResult, runMs: number): void {
    this.casesFinished.inc({ status: result.status });
    this.caseSeconds.observe({ status: result.status }, runMs / 1000);
    if (result.status === "abstained") this.abstentions.inc();
    this.searches.inc(result.usage.searchCalls);
    this.repairsPerCase.observe(result.candidates.reduce((n, c) => n + (c.repairs ?? 0), 0));
  }

  /** LangChain callbacks that count every model call the pipeline makes, by the metadata the client sets. */
  modelCallbacks(): BaseCallbackHandler {
    return new ModelCallMetrics(this);
  }
}

/** The methods the API serves; any other (WebDAV, SEARCH, a made-up one) is "other". */
const HTTP_METHODS: ReadonlySet<string> = new Set(["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]);
/** Statuses the API answers with on purpose; any other is counted by its class ("5xx"). */
const HTTP_STATUSES: ReadonlySet<number> = new Set([200, 201, 202, 204, 206, 304, 400, 401, 403, 404, 405, 406, 409, 410, 413, 414, 415, 422, 429, 500, 502, 503, 504]);
/** The route label of a request no route matched: one value, whatever path was asked for. */
export const UNMATCHED_ROUTE = "unmatched";

/**
 * The labels of one HTTP request, every value from a closed list, so a client without a key
 * cannot add series by choosing methods or paths: the method if the API serves it, else
 * "other"; the route template the router matched (never the URL), else "unmatched"; the
 * status for the routes we serve, its class ("4xx") for unmatched requests and unusual codes.
 */
export function httpLabels(method: string, route: string | undefined, status: number): { method: string; route: string; status: string } {
  const matched = route !== undefined && route !== "";
  const statusLabel = matched && HTTP_STATUSES.has(status) ? String(status) : `${Math.trunc(status / 100)}xx`;
  return { method: HTTP_METHODS.has(method) ? method : "other", route: matched ? route : UNMATCHED_ROUTE, status: statusLabel };
}

interface OpenCall {
  started: number;
  agent: string;
  role: string;
  model: string;
}

/** Our names only: anything else becomes "other", so a label value is always from a short, known list. */
const NAME = /^[a-z0-9][a-z0-9._:/-]{0,79}$/i;
const safe = (v: unknown): string => (typeof v === "string" && NAME.test(v) ? v : "other");

class ModelCallMetrics extends BaseCallbackHandler {
  name = "medmmv-metrics";
  readonly #m: ServiceMetrics;
  readonly #open = new Map<string, OpenCall>();

  constructor(m: ServiceMetrics) {
    super();
    this.#m = m;
  }

  override handleChatModelStart(_llm: unknown, _messages: unknown, runId: string, _parent?: string, _extra?: unknown, _tags?: string[], metadata?: Record<string, unknown>): void {
    this.#open.set(runId, { started: Date.now(), agent: safe(metadata?.agent), role: safe(metadata?.role), model: safe(metadata?.model) });
  }

  override handleLLMEnd(output: LLMResult, runId: string): void {
    const call = this.#take(runId);
    if (!call) return;
    this.#m.modelCalls.inc({ agent: call.agent, role: call.role, model: call.model, outcome: "ok" });
    const gen = output.generations?.[0]?.[0] as { message?: { usage_metadata?: { input_tokens?: number; output_tokens?: number; input_token_details?: { cache_read?: number } } } } | undefined;
    const usage = gen?.message?.usage_metadata;
    const labels = { role: call.role, model: call.model };
    if (usage?.input_tokens) this.#m.tokens.inc({ kind: "prompt", ...labels }, usage.input_tokens);
    if (usage?.output_tokens) this.#m.tokens.inc({ kind: "completion", ...labels }, usage.output_tokens);
    if (usage?.input_token_details?.cache_read) this.#m.tokens.inc({ kind: "cached", ...labels }, usage.input_token_details.cache_read);
  }

  override handleLLMError(err: Error, runId: string): void {
    const call = this.#take(runId);
    if (!call) return;
    const status = (err as { status?: unknown }).status;
    this.#m.modelCalls.inc({ agent: call.agent, role: call.role, model: call.model, outcome: status === 429 ? "rate_limited" : "error" });
  }

  #take(runId: string): OpenCall | undefined {
    const call = this.#open.get(runId);
    if (!call) return undefined;
    this.#open.delete(runId);
    this.#m.modelLatency.observe({ role: call.role, model: call.model }, (Date.now() - call.started) / 1000);
    return call;
  }
}
