import type { FastifyRequest } from "fastify";
import { isMedmmvError, MedmmvError } from "../../core/contracts/errors.js";
import type { AccessOutcome, AccessTrail } from "../store/case-store.js";
import type { CaseScope } from "../service/case-service.js";
import { requirePermission, type Permission } from "./auth.js";
import { STATUS_BY_CODE } from "./errors.js";

/** The accesses the trail names (docs/api.md#access-trail). */
export type AccessAction = "create" | "read" | "events" | "graph" | "fhir" | "turns" | "view" | "view-link" | "export" | "delete" | "search" | "audit-read" | "feedback" | "audit-link";

type Detail = Record<string, string | number | boolean | null>;

/** A refusal that does not say whether the case exists (401, 403, 404) is `denied`; anything else that went wrong is `failed`. */
function outcomeOf(err: unknown): { outcome: AccessOutcome; status: number } {
  const status = isMedmmvError(err) ? (STATUS_BY_CODE[err.code] ?? 500) : typeof (err as { statusCode?: unknown })?.statusCode === "number" ? (err as { statusCode: number }).statusCode : 500;
  return { outcome: status === 401 || status === 403 || status === 404 ? "denied" : "failed", status };
}

/**
 * Writes one access-trail event per access, as part of the request: the event is appended
 * before the answer goes out, and when it cannot be written the request fails with 503
 * instead of being served unrecorded. Requests that never authenticated have no caller to
 * name and are not in the trail (the request log and the failed-login budget cover them).
 */
export class AccessRecorder {
  constructor(private readonly trail: AccessTrail) {}

  async record(request: FastifyRequest, action: AccessAction, caseId: string | null, outcome: AccessOutcome, detail: Detail = {}): Promise<void> {
    const p = request.principal;
    if (!p) return;
    try {
      await this.trail.appendAccess({ tenant: p.tenant, actor: p.actor, action, caseId, outcome, client: request.ip ?? null, requestId: String(request.id), detail });
    } catch (err) {
      throw new MedmmvError("STORE_FAILED", "the access could not be written to the access trail, so it was not served; try again", { cause: err, retryable: true });
    }
  }

  /**
   * Runs the access `fn` and records it: success (with `detail` of its answer), or the
   * refusal or failure it threw (its HTTP status), before answering or rethrowing. A
   * `caseId` function names the case from the answer (a creation: the new case's id).
   */
  async audited<T>(request: FastifyRequest, action: AccessAction, caseId: string | null | ((out: T) => string), fn: () => Promise<T>, detail: (out: T) => Detail = () => ({})): Promise<T> {
    let out: T;
    try {
      out = await fn();
    } catch (err) {
      const { outcome, status } = outcomeOf(err);
      await this.record(request, action, typeof caseId === "function" ? null : caseId, outcome, { status });
      throw err;
    }
    await this.record(request, action, typeof caseId === "function" ? caseId(out) : caseId, "success", detail(out));
    return out;
  }

  /**
   * The permission check of a route that must refuse before its body is read (a 403 for a
   * role that may never submit, whatever it sent): a refusal is recorded, a pass is not
   * (the handler records the access itself).
   */
  async guard(request: FastifyRequest, action: AccessAction, permission: Permission): Promise<CaseScope> {
    try {
      return requirePermission(request, permission);
    } catch (err) {
      await this.record(request, action, null, "denied", { status: outcomeOf(err).status });
      throw err;
    }
  }
}
