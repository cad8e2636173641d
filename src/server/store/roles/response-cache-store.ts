/**
 * Response cache store: model responses kept by content-addressed key, so a rerun (an eval,
 * a report, a resumed case) gets the same reply without paying for the call again. The
 * server's store-backed model-response cache (service/store-cache) and the eval command's
 * cache read and write it.
 */

export interface CachedResponse {
  /** The raw provider message JSON we need to rebuild the reply, plus its usage. */
  value: Record<string, unknown>;
  createdAt: string;
}

export interface ResponseCacheStore {
  /** Content-addressed model response cache. */
  getCachedResponse(key: string): Promise<CachedResponse | null>;
  /** `caseId`: the case whose call it was; deleting or purging that case removes the reply (it may quote the case). */
  putCachedResponse(key: string, value: Record<string, unknown>, caseId?: string | null): Promise<void>;
}
