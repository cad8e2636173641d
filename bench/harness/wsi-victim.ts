/**
 * One lying-PACS scenario read by the product in a process of its own (forked by the
 * lying-pacs bench section with --expose-gc), so its memory is measured from a clean baseline
 * and the lying server's own buffers are not counted: the case intake's reader (prepareImages,
 * or prepareCase for the refusal scenario) against the lying server, and, while it runs, the
 * peak RSS and V8 heap above the baseline (sampled every 2 ms, and the process's maxRSS) and
 * the event loop's longest delay (perf_hooks.monitorEventLoopDelay, 1 ms resolution).
 */
import { monitorEventLoopDelay } from "node:perf_hooks";
import { prepareCase } from "../../src/core/intake/case-intake.js";
import { prepareImages, type PrepareImageOptions } from "../../src/core/intake/images.js";

export interface VictimJob {
  root: string;
  /** Study UIDs read as the case's images (one, or the slide and the refused object together). */
  studies: string[];
  /** The DICOMweb timeout: long for the refusal scenario, so only the abort can drop its request. */
  timeoutMs: number;
}

export interface VictimReport {
  outcome: string;
  code: string | null;
  /** Date.now() when the (last) read ended (refused or done). */
  endedAt: number;
  ms: number;
  rssGrowthMiB: number;
  heapGrowthMiB: number;
  /** Above the baseline once the read ended and garbage was collected: what the read kept. */
  heapKeptMiB: number;
  maxLoopDelayMs: number;
  /** The worst of the warm reads' (maxLoopDelayMs is their median). */
  worstLoopDelayMs?: number;
  /** The same for the process's first read (loading and compiling included). */
  coldLoopDelayMs?: number;
  coldRssGrowthMiB?: number;
}

const MIB = 1024 * 1024;
/** Reads measured after the first; each scenario is read 1 + WARM_READS times by one process. */
export const WARM_READS = 3;
const gc = (globalThis as { gc?: () => void }).gc ?? (() => undefined);

process.once("message", (raw) => {
  const job = raw as VictimJob;
  // Read twice: the first read pays for what a process does once (loading sharp's native
  // library, compiling the reader); the second is what a running server does on every attack.
  // Three warm reads: the loop's delay on a shared machine is noisy, so the median is reported
  // beside the worst; memory is the worst of the three.
  void run(job).then(async (cold) => {
    const warm: VictimReport[] = [];
    for (let i = 0; i < WARM_READS; i++) warm.push(await run(job));
    const byDelay = [...warm].sort((a, b) => a.maxLoopDelayMs - b.maxLoopDelayMs);
    const median = byDelay[Math.floor(WARM_READS / 2)]!;
    const report: VictimReport = {
      ...median,
      // The last read's end: what came after it (requests, the drop of one in flight) is that read's.
      endedAt: warm.at(-1)!.endedAt,
      rssGrowthMiB: Math.max(...warm.map((w) => w.rssGrowthMiB)),
      heapGrowthMiB: Math.max(...warm.map((w) => w.heapGrowthMiB)),
      heapKeptMiB: Math.max(...warm.map((w) => w.heapKeptMiB)),
      worstLoopDelayMs: byDelay.at(-1)!.maxLoopDelayMs,
      coldLoopDelayMs: cold.maxLoopDelayMs,
      coldRssGrowthMiB: cold.rssGrowthMiB,
    };
    process.send!(report, () => process.exit(0));
  });
});

async function run(job: VictimJob): Promise<VictimReport> {
  const opts: PrepareImageOptions = {
    maxBytes: 64 * MIB,
    maxPixels: 40_000_000,
    allowPath: false,
    dicomweb: { servers: [job.root], maxInstances: 4, timeoutMs: job.timeoutMs, attempts: 1 },
  };
  const images = job.studies.map((study, k) => ({ id: `image-${k + 1}`, dicomweb: { server: job.root, study } }));
  // Warm the HTTP client and the modules first: the baseline is the process ready to read.
  await fetch(`${job.root}/warm-up`).then((r) => r.arrayBuffer()).catch(() => undefined);
  gc();
  const base = process.memoryUsage();
  const maxRssBefore = process.resourceUsage().maxRSS * 1024;
  let peakRss = base.rss;
  let peakHeap = base.heapUsed;
  const sample = setInterval(() => {
    const u = process.memoryUsage();
    peakRss = Math.max(peakRss, u.rss);
    peakHeap = Math.max(peakHeap, u.heapUsed);
  }, 2);
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  const started = performance.now();
  let outcome = "read";
  let code: string | null = null;
  try {
    if (images.length === 1) {
      const pictures = await prepareImages(images[0]!, opts);
      outcome = `read: ${pictures.length} picture(s)`;
    } else {
      await prepareCase({ question: "What is it?", images }, opts);
    }
  } catch (e) {
    const err = e as { code?: string; message?: string };
    code = err.code ?? "ERROR";
    outcome = (err.message ?? String(e)).replace(/^image "[^"]+" \([^)]+\): /, "");
  }
  const endedAt = Date.now();
  const ms = performance.now() - started;
  loop.disable();
  clearInterval(sample);
  const u = process.memoryUsage();
  // The kernel's high-water mark is exact when the read set it; otherwise the peak was below the startup's and the samples tell it.
  const maxRssAfter = process.resourceUsage().maxRSS * 1024;
  peakRss = Math.max(peakRss, u.rss, maxRssAfter > maxRssBefore ? maxRssAfter : 0);
  peakHeap = Math.max(peakHeap, u.heapUsed);
  gc();
  return {
    outcome,
    code,
    endedAt,
    ms,
    rssGrowthMiB: (peakRss - base.rss) / MIB,
    heapGrowthMiB: (peakHeap - base.heapUsed) / MIB,
    heapKeptMiB: (process.memoryUsage().heapUsed - base.heapUsed) / MIB,
    maxLoopDelayMs: loop.max / 1e6,
  };
}
