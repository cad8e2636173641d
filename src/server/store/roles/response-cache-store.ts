/**
 * Response cache store: model responses kept by content-addressed key, so a rerun (an eval,
 * a report, a resumed case) gets the same reply without paying for the call again. The
 * store-backed model-response cache reads and writes it; nothing else does.
 */

export interface CachedResponse {
  /** The raw provider message JSON we need to rebuild the reply, plus its usage. */
  value: Record<string, unknown>;
  createdAt: string;
}

export interface ResponseCacheStore {
  /** Content-addressed model response cache. */
  getCachedResponse(key: string): Promise<CachedResponse | null>;
  putCachedResponse(key: string, value: Record<string, unknown>): Promise<void>;
}
