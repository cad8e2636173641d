import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { BenchContext } from "../harness/context.js";
import { startLyingPacs, STUDIES, type LyingPacs } from "../harness/lying-pacs-server.js";
import { WARM_READS, type VictimJob, type VictimReport } from "../harness/wsi-victim.js";
import { fmt, table, yesNo, type SectionReport } from "../harness/report.js";

/** The bounds (issue 54, "Done means"). */
const MAX_GROWTH_MIB = 300;
const MAX_LOOP_DELAY_MS = 100;
const MAX_STOP_MS = 100;

/** One scenario read in a fresh process (wsi-victim.ts), so each starts from the same baseline. */
function readInChild(job: VictimJob): Promise<VictimReport> {
  const child = fork(fileURLToPath(new URL("../harness/wsi-victim.ts", import.meta.url)), [], { execArgv: [...process.execArgv, "--expose-gc"], stdio: ["ignore", "inherit", "inherit", "ipc"] });
  return new Promise((resolve, reject) => {
    child.once("message", (r) => resolve(r as VictimReport));
    child.once("exit", (code) => reject(new Error(`the reading process exited (code ${code}) without a report`)));
    child.send(job);
  });
}

interface Scenario {
  name: string;
  studies: string[];
  /** The outcome the reader must give: a 4xx code, or null for a slide that must be read. */
  expected: string | null;
  timeoutMs?: number;
}

const SCENARIOS: Scenario[] = [
  { name: "40 JPEG tiles of 4096², placed 1 px apart", studies: [STUDIES.overlapping], expected: "INVALID_INPUT" },
  { name: "40 on-grid JPEG tiles of 4096² (no level small enough)", studies: [STUDIES.hugeTiles], expected: "PAYLOAD_TOO_LARGE" },
  { name: "64 instances of ~10 MiB metadata", studies: [STUDIES.metadata10], expected: "PAYLOAD_TOO_LARGE" },
  { name: "64 instances of 7.5 MiB metadata (under the instance cap, past the series')", studies: [STUDIES.metadata7], expected: "PAYLOAD_TOO_LARGE" },
  { name: "12 metadata answers of ~650 bytes, 250,000-frame levels", studies: [STUDIES.levels12], expected: "PAYLOAD_TOO_LARGE" },
  { name: "a legitimate 4096² level of 256 JPEG tiles (canvas + all tiles 100.7 MB decoded, over the default 100 MB)", studies: [STUDIES.legitimate], expected: null },
];

/**
 * The three ways one lying PACS took the process down (issue 54), and a refusal that must stop
 * a case's other images, played against a local lying DICOMweb server (lying-pacs-server.ts)
 * and read by the product in a fresh process each: the outcome, the peak memory above the
 * process's baseline and the event loop's longest delay while it read.
 */
export async function lyingPacs(ctx: BenchContext): Promise<SectionReport> {
  const started = Date.now();
  const pacs: LyingPacs = await startLyingPacs();
  const rows: Array<Array<string | number>> = [];
  const verdicts: SectionReport["verdicts"] = [];
  let worstGrowth = 0;
  let worstDelay = 0;
  let coldWorst = 0;
  let allAsExpected = true;
  try {
    for (const s of SCENARIOS) {
      pacs.log.length = 0;
      const r = await readInChild({ root: pacs.root, studies: s.studies, timeoutMs: s.timeoutMs ?? 30_000 });
      // Requests of one read (the process reads 1 + WARM_READS times).
      const frames = pacs.log.filter((q) => q.url.includes("/frames/")).length / (1 + WARM_READS);
      const metadata = pacs.log.filter((q) => q.url.endsWith("/metadata")).length / (1 + WARM_READS);
      const asExpected = r.code === s.expected;
      allAsExpected &&= asExpected;
      worstGrowth = Math.max(worstGrowth, r.rssGrowthMiB);
      worstDelay = Math.max(worstDelay, r.maxLoopDelayMs);
      coldWorst = Math.max(coldWorst, r.coldLoopDelayMs ?? 0);
      rows.push([s.name, `${r.code ?? "read"}${asExpected ? "" : " (**unexpected**)"}`, metadata, frames, fmt(r.rssGrowthMiB, 0), fmt(r.heapGrowthMiB, 0), fmt(r.heapKeptMiB, 1), fmt(r.maxLoopDelayMs, 0), fmt(r.worstLoopDelayMs ?? NaN, 0), fmt(r.coldLoopDelayMs ?? NaN, 0), fmt(r.ms, 0), r.outcome.slice(0, 110)]);
      ctx.log(`lying-pacs: ${s.name} → ${r.code ?? "read"}, +${fmt(r.rssGrowthMiB, 0)} MiB RSS, loop ${fmt(r.maxLoopDelayMs, 0)} ms`);
    }

    // A case refused for one image (415, an MPEG-2 object) while its slide's frame request is in flight.
    pacs.log.length = 0;
    const r = await readInChild({ root: pacs.root, studies: [STUDIES.hanging, STUDIES.mpeg], timeoutMs: 600_000 });
    // The (second) read's slide frame request is dropped by the abort: wait for the server to see it (bounded).
    const lastFrame = () => pacs.log.filter((q) => q.url.includes("/frames/")).at(-1);
    for (let i = 0; i < 200 && lastFrame()?.droppedAt === undefined; i++) await new Promise((res) => setTimeout(res, 5));
    const frame = lastFrame();
    const stopMs = frame?.droppedAt !== undefined ? Math.max(0, frame.droppedAt - r.endedAt) : Number.POSITIVE_INFINITY;
    const after = pacs.log.filter((q) => q.at > r.endedAt).length;
    worstGrowth = Math.max(worstGrowth, r.rssGrowthMiB);
    worstDelay = Math.max(worstDelay, r.maxLoopDelayMs);
    const refused = r.code === "UNSUPPORTED_MEDIA";
    allAsExpected &&= refused;
    rows.push(["a case refused (415) for its second image while its slide's frame request is in flight", `${r.code ?? "read"}${refused ? "" : " (**unexpected**)"}`, pacs.log.filter((q) => q.url.endsWith("/metadata")).length / (1 + WARM_READS), pacs.log.filter((q) => q.url.includes("/frames/")).length / (1 + WARM_READS), fmt(r.rssGrowthMiB, 0), fmt(r.heapGrowthMiB, 0), fmt(r.heapKeptMiB, 1), fmt(r.maxLoopDelayMs, 0), fmt(r.worstLoopDelayMs ?? NaN, 0), fmt(r.coldLoopDelayMs ?? NaN, 0), fmt(r.ms, 0), `slide's frame request dropped ${fmt(stopMs, 0)} ms after the refusal; ${after} request(s) after it`]);

    verdicts.push(
      { target: "every lying scenario ends in its 4xx (the legitimate slide is read)", measured: yesNo(allAsExpected), met: allAsExpected },
      { target: `peak memory at most +${MAX_GROWTH_MIB} MiB above the reading process's baseline in every scenario`, measured: `+${fmt(worstGrowth, 0)} MiB at worst (RSS)`, met: worstGrowth <= MAX_GROWTH_MIB },
      { target: `no event-loop stall over ${MAX_LOOP_DELAY_MS} ms in any scenario (a running process)`, measured: `${fmt(worstDelay, 0)} ms at worst (a fresh process's first read: ${fmt(coldWorst, 0)} ms)`, met: worstDelay <= MAX_LOOP_DELAY_MS },
      { target: `a 415 stops its slide's reading within ${MAX_STOP_MS} ms, and nothing more is asked of the PACS`, measured: `${fmt(stopMs, 0)} ms, ${after} request(s) after the refusal`, met: stopMs <= MAX_STOP_MS && after === 0 },
    );
  } finally {
    await pacs.close();
  }
  const body = [
    "Each row is one scenario of issue 54's lying PACS, served by a local DICOMweb server (`bench/harness/lying-pacs-server.ts`: PS3.18 shapes, lying content) and read by the product's case intake in a fresh process (`bench/harness/wsi-victim.ts`, `--expose-gc`) so that every row starts from the same baseline and the server's own buffers are not counted. *RSS* and *heap* are the peaks above that baseline while the read ran (sampled every 2 ms, and the kernel's maxRSS when the read set it); *kept* is the heap above the baseline once the read ended and garbage was collected; *loop* is the longest event-loop delay (`perf_hooks.monitorEventLoopDelay`, 1 ms resolution). Metadata and frames are the requests the server saw.",
    "",
    table(["scenario", "outcome", "metadata", "frames", "RSS +MiB", "heap +MiB", "kept MiB", "loop ms (median)", "loop ms (worst)", "first read's loop ms", "ms", "why"], rows, ["l", "l", "r", "r", "r", "r", "r", "r", "r", "r", "r", "l"]),
    "",
    `Each process reads its scenario ${1 + WARM_READS} times. The first read pays for what a process does once (loading sharp's native library, compiling the reader): its loop delay is shown as *first read's loop ms* and not held to the bound. The other ${WARM_READS} are what a running server does on every attack: memory is the worst of them, the loop delay their median (held to the bound) and worst (the delay is wall-clock, so on a shared machine another process's burst shows in it).`,
    "",
    "The 415 row's *why* says how long after the refusal the slide's frame request in flight was dropped (the server's clock, which this process shares) and how many requests came after it.",
  ].join("\n");
  return { id: "lying-pacs", title: "A PACS that lies about a whole slide: outcome, memory and event loop", command: "npm run bench -- --only lying-pacs", body, verdicts, seconds: (Date.now() - started) / 1000 };
}
