let lastMs = 0;
/**
 * Wall-clock ISO timestamp that never repeats or goes backwards within this process,
 * so "newest first" follows insertion order and every update visibly moves updatedAt
 * even when two writes land in the same millisecond.
 */
export function nowIso(): string {
  lastMs = Math.max(Date.now(), lastMs + 1);
  return new Date(lastMs).toISOString();
}
