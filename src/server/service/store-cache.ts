import type { ResponseCache } from "../../core/llm/model-client.js";
import type { ResponseCacheStore } from "../store/case-store.js";

/**
 * The model-response cache on top of the case store, so deterministic calls of a
 * resumed case (and of identical cases) are answered without a new model call.
 */
export function storeResponseCache(store: ResponseCacheStore): ResponseCache {
  return {
    async get(key) {
      return (await store.getCachedResponse(key))?.value ?? null;
    },
    async put(key, value, caseKey) {
      await store.putCachedResponse(key, value, caseKey ?? null);
    },
  };
}
