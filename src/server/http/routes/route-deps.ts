import type { Config } from "../../../core/config.js";
import type { CaseService } from "../../service/case-service.js";
import type { CaseStore } from "../../store/case-store.js";

/** What every route plugin is given by the app. */
export interface RouteDeps {
  config: Config;
  service: CaseService;
  store: CaseStore;
  /** Interval of SSE heartbeat comments (ms). */
  heartbeatMs: number;
}
