/**
 * Preloaded into the server under test (`node --expose-gc --import tsx --import ./load/gc-probe.ts`):
 * on SIGUSR2 it collects garbage twice and prints the heap on stderr as one JSON line, so
 * the soak can compare the heap after load with the heap before it without touching the
 * server's code or API.
 */
const gc = (globalThis as { gc?: () => void }).gc;

process.on("SIGUSR2", () => {
  if (!gc) {
    process.stderr.write(`${JSON.stringify({ gcProbe: null, error: "run node with --expose-gc" })}\n`);
    return;
  }
  gc();
  // A second pass after the event loop turns: finalizers and weak references settle first.
  setImmediate(() => {
    gc();
    const m = process.memoryUsage();
    process.stderr.write(`${JSON.stringify({ gcProbe: { heapUsed: m.heapUsed, heapTotal: m.heapTotal, rss: m.rss, external: m.external } })}\n`);
  });
});
