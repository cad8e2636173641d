/**
 * The longest the event loop went without running a 1 ms timer while `work` ran: what a
 * request arriving meanwhile (a `/healthz` probe) waits at worst. Shared by the FHIR intake
 * bench section and the slices test.
 */
export async function longestPause<T>(work: () => Promise<T>): Promise<{ pause: number; took: number; value: T }> {
  let last = performance.now();
  let pause = 0;
  const tick = setInterval(() => {
    const now = performance.now();
    pause = Math.max(pause, now - last);
    last = now;
  }, 1);
  const start = performance.now();
  try {
    const value = await work();
    // The gap since the last tick counts too: work that never lets the timer run pauses from start to end.
    pause = Math.max(pause, performance.now() - last);
    return { pause, took: performance.now() - start, value };
  } finally {
    clearInterval(tick);
  }
}
