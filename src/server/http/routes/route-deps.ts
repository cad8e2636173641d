import type { Config } from "../../../core/config.js";
import type { CaseService } from "../../service/case-service.js";
import type { CaseStore } from "../../store/case-store.js";
import type { AccessRecorder } from "../access-recorder.js";
import type { ApiKeys, Credentials } from "../auth.js";
import type { RequestGate } from "../plugins/request-gate.js";
import type { ServiceMetrics } from "../../engine/service-metrics.js";

/** What every route plugin is given by the app. */
export interface RouteDeps {
  config: Config;
  service: CaseService;
  store: CaseStore;
  /** Interval of SSE heartbeat comments (ms). */
  heartbeatMs: number;
  /** Authentication and the per-key rate limit, shared by every authenticated route. */
  gate: RequestGate;
  /** Which key a view link was made with, and whether it is still configured. */
  credentials: Credentials;
  /** The configured API keys (one object for every route that takes a key). */
  keys: ApiKeys;
  /** Writes the access trail, as part of each request. */
  access: AccessRecorder;
  /**
   * Open event streams in this process, shared by every route that serves the stream (the API's
   * and the live audit page's): a count per key, whichever path is used, and one per key for the
   * streams opened through its view links (their own, smaller cap).
   */
  openStreams: Map<string, number>;
  /** The server's Prometheus metrics, when it serves them. */
  metrics?: ServiceMetrics;
}
