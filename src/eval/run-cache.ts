import { randomUUID } from "node:crypto";
import path from "node:path";
import { MedmmvError } from "../core/contracts/errors.js";
import type { Config } from "../core/config.js";
import type { ResponseCache } from "../core/llm/model-client.js";
import { Pipeline, type PipelineDeps } from "../core/workflow/pipeline.js";
import { MANIFEST_FILE, readManifest } from "./manifest.js";

/**
 * Each run of an eval draws afresh from the model: the response cache is seen through a
 * namespace of (this eval's cache scope, run index), so run 2 never gets run 1's answers
 * and a new eval of the same items never gets an earlier eval's. Within a run the cache
 * still works as before (a resumed item, an identical call inside one case). A re-run that
 * asks to replay a finished eval (`--replay-cache DIR`) takes that eval's scope: its run r
 * reads what run r of DIR stored.
 */
export function newCacheScope(): string {
  return randomUUID();
}

export function runScopedCache(cache: ResponseCache | null, scope: string, run: number): ResponseCache | null {
  if (!cache) return null;
  const ns = `eval:${scope}:r${run}:`;
  return {
    get: (key) => cache.get(ns + key),
    put: (key, value) => cache.put(ns + key, value),
  };
}

/**
 * The scope of this session's runs: the replayed folder's when asked to replay one, the
 * folder's own on --resume (so a resumed item sees what its run stored), else a new one.
 */
export async function cacheScopeFor(dir: string, o: { resume?: boolean; replayCache?: string }): Promise<string> {
  if (o.replayCache) {
    const from = path.resolve(o.replayCache);
    const m = await readManifest(from);
    if (!m) throw new MedmmvError("INVALID_INPUT", `--replay-cache: ${from} is not an eval folder (no ${MANIFEST_FILE})`);
    if (!m.cacheScope) throw new MedmmvError("INVALID_INPUT", `--replay-cache: ${from} was written before runs had their own cache scope; there is nothing of its own to replay`);
    return m.cacheScope;
  }
  if (o.resume) {
    const m = await readManifest(dir).catch(() => null);
    if (m?.cacheScope) return m.cacheScope;
  }
  return newCacheScope();
}

/**
 * One pipeline per run, each seeing the response cache through its run's namespace, all on one
 * limiter (the provider's limits hold across the runs); made on first use.
 */
export function runPipelines(config: Config, cache: ResponseCache | null, scope: string, deps: Omit<PipelineDeps, "cache" | "limiter">): (run: number) => Pipeline {
  const pipelines = new Map<number, Pipeline>();
  return (run) => {
    let p = pipelines.get(run);
    if (!p) pipelines.set(run, (p = new Pipeline(config, { ...deps, cache: runScopedCache(cache, scope, run), limiter: pipelines.get(0)?.limiter })));
    return p;
  };
}
