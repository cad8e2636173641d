/**
 * The whole CaseStore conformance suite: every role's file, registered for one backend. Each
 * backend's test file calls describeStoreConformance once, so a backend cannot pass by
 * skipping a role. The fixtures are re-exported for the backends' own tests.
 */
import { describeCaseRecordsConformance } from "./case-records.js";
import { describeCaseEventsConformance } from "./case-events.js";
import { describeRunOwnershipConformance } from "./run-ownership.js";
import { describeWorkflowCheckpointsConformance } from "./workflow-checkpoints.js";
import { describeConversationTurnsConformance } from "./conversation-turns.js";
import { describeTokenLedgerConformance } from "./token-ledger.js";
import { describeResponseCacheStoreConformance } from "./response-cache-store.js";
import { describeStoreLifecycleConformance } from "./store-lifecycle.js";
import { describeAccessTrailConformance, describeCaseSearchConformance, describeSignedAccessTrailConformance } from "./access-trail.js";
import type { StoreHarness } from "./fixtures.js";

export { expectCode, makeImage, makeNewCase, makeResult, type StoreHarness } from "./fixtures.js";

export function describeStoreConformance(name: string, makeStore: () => Promise<StoreHarness>): void {
  describeCaseRecordsConformance(name, makeStore);
  describeCaseEventsConformance(name, makeStore);
  describeRunOwnershipConformance(name, makeStore);
  describeWorkflowCheckpointsConformance(name, makeStore);
  describeConversationTurnsConformance(name, makeStore);
  describeTokenLedgerConformance(name, makeStore);
  describeResponseCacheStoreConformance(name, makeStore);
  describeStoreLifecycleConformance(name, makeStore);
  describeAccessTrailConformance(name, makeStore);
  describeSignedAccessTrailConformance(name, makeStore);
  describeCaseSearchConformance(name, makeStore);
}
