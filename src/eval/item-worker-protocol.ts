import type { Config } from "../core/config.js";
import type { PreparedCase } from "../core/contracts/clinical-case.js";
import type { ErrorCode } from "../core/contracts/errors.js";
import type { EvalItem } from "./datasets/types.js";
import type { ItemMethodSettings } from "./item-methods.js";
import type { MethodOutput } from "./methods/types.js";

/**
 * The messages between `medmmv eval --workers N` and its item processes (Node's IPC channel,
 * advanced serialization: structured clones, so buffers and dates cross as they are).
 * The runner keeps the items' order, the results file, the budget, the throttle and the
 * response cache; an item process only answers items.
 */
export type ToItemWorker =
  /** First message, once the process said "started": everything needed to build the same pipelines and method as the runner. */
  | { type: "init"; config: Config; settings: ItemMethodSettings; cacheScope: string; cached: boolean }
  | { type: "run"; task: number; item: EvalItem; prepared: PreparedCase; run: number }
  /** The eval was cancelled: every item in flight stops. */
  | { type: "abort" }
  | { type: "cacheValue"; req: number; value: Record<string, unknown> | null; error?: string; /** The error is a replay's missing call (run-responses.ts): the call must fail, not go to the model. */ replayMiss?: boolean }
  /** Finish: the process exits. */
  | { type: "close" };

export type FromItemWorker =
  /** Listening: the runner sends "init" on this, not before (nothing is lost while the process loads). */
  | { type: "started" }
  | { type: "ready" }
  | { type: "initFailed"; error: { code: ErrorCode; message: string } }
  | { type: "done"; task: number; out: MethodOutput }
  /** The method threw (cancelled, or a bug): the runner records it as the in-process method's throw. */
  | { type: "threw"; task: number; error: { code: ErrorCode; message: string } }
  | { type: "cacheGet"; req: number; key: string }
  | { type: "cachePut"; key: string; value: Record<string, unknown> }
  /** The provider answered 429: the runner's throttle starts fewer items. */
  | { type: "rateLimited" };
