import { Redis } from "ioredis";

/**
 * An ioredis connection for BullMQ and our pub/sub. `maxRetriesPerRequest: null` is what
 * BullMQ's workers require (a blocking command must wait through a reconnect, not fail);
 * ioredis reconnects for ever with a capped backoff, so a Redis restart is ridden out.
 */
export function openRedis(url: string, name: string | null): Redis {
  return new Redis(url, {
    maxRetriesPerRequest: null,
    ...(name ? { connectionName: name } : {}),
    retryStrategy: (times) => Math.min(100 * times, 2_000),
    lazyConnect: false,
  });
}
