/**
 * Soak: a long run of cheap requests — reads of stored cases, case lists, and small async
 * cases (k=1, no repairs) against a fast scripted model — then every case drained, two
 * forced GCs in the server, and its heap compared with the heap after warm-up. A heap that
 * does not come back is a leak (per request or per case).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { clinicalScenario } from "../src/scripted/clinical-scenario.js";
import { startScriptedOpenAI } from "../src/scripted/scripted-openai-server.js";
import { api, latencySummary, mib, serverEnv, startServerChild, type HeapProbe, type ServerChild } from "./lib.js";
import { machineInfo, type MachineInfo } from "../src/scripted/machine-info.js";

export interface SoakOptions {
  requests: number;
  workers: number;
  modelLatencyMs: number;
  /** Stop issuing requests after this long (the run stays bounded on a slow machine). */
  maxMs: number;
}

export interface SoakReport {
  kind: "soak";
  description: string;
  machine: MachineInfo;
  config: SoakOptions & { postEvery: number; listEvery: number };
  requestsSent: number;
  errors: number;
  statusCounts: Record<string, number>;
  casesCreated: number;
  casesUnfinished: number;
  latencyMs: ReturnType<typeof latencySummary>;
  wallMs: number;
  heapMiB: { baseline: number; samples: Array<{ afterRequests: number; heapUsed: number }>; final: number; delta: number; tolerance: number };
  backToBaseline: boolean;
  serverPeakRssMiB: number | null;
}

const POST_EVERY = 10;
const LIST_EVERY = 25;

function smallCase(i: number) {
  return {
    question: "Which diagnosis fits best?",
    notes: `Soak case ${i}: fever and productive cough for three days, crackles at the right lung base, raised white cell count.`,
    options: { A: "Community-acquired pneumonia", B: "Asthma exacerbation", C: "Pulmonary embolism" },
  };
}

async function settledHeap(server: ServerChild): Promise<HeapProbe> {
  // The lowest of a few probes: a probe can land while a late timer still holds garbage.
  let best: HeapProbe | null = null;
  for (let i = 0; i < 3; i++) {
    await new Promise((r) => setTimeout(r, 300));
    const p = await server.probeHeap();
    if (!best || p.heapUsed < best.heapUsed) best = p;
  }
  return best!;
}

async function unfinishedCount(base: string): Promise<number> {
  let n = 0;
  for (const status of ["queued", "running"]) {
    const res = await api(base, `/cases?status=${status}&limit=100`);
    n += ((await res.json()) as { items: unknown[] }).items.length;
  }
  return n;
}

export async function runSoak(o: SoakOptions): Promise<SoakReport> {
  const model = await startScriptedOpenAI({ scenario: clinicalScenario({ rolloutAnswers: ["A"] }), latencyMs: o.modelLatencyMs });
  const dataDir = await mkdtemp(path.join(tmpdir(), "medmmv-soak-"));
  const server = await startServerChild(serverEnv(model.baseUrl, dataDir, { MEDMMV_K: "1", MEDMMV_MAX_REPAIRS: "0" }));
  const ids: string[] = [];
  const statusCounts: Record<string, number> = {};
  const latencies: number[] = [];
  let errors = 0;
  let sent = 0;

  const one = async (i: number): Promise<void> => {
    const t0 = performance.now();
    let res: Response;
    let expected: number;
    try {
      if (i % POST_EVERY === 0 || ids.length === 0) {
        res = await api(server.address, "/diagnose?k=1&maxRepairs=0", { method: "POST", json: smallCase(i), headers: { prefer: "respond-async" } });
        expected = 202;
        if (res.status === 202) ids.push(((await res.json()) as { caseId: string }).caseId);
        else await res.arrayBuffer();
      } else if (i % LIST_EVERY === 0) {
        res = await api(server.address, "/cases?limit=20");
        expected = 200;
        await res.arrayBuffer();
      } else {
        res = await api(server.address, `/cases/${ids[(i * 7919) % ids.length]}`);
        expected = 200;
        await res.arrayBuffer();
      }
      statusCounts[res.status] = (statusCounts[res.status] ?? 0) + 1;
      if (res.status !== expected) errors++;
    } catch (err) {
      const key = `network: ${(err as Error).message}`;
      statusCounts[key] = (statusCounts[key] ?? 0) + 1;
      errors++;
    }
    latencies.push(performance.now() - t0);
  };

  const runRequests = async (from: number, to: number, deadline: number): Promise<void> => {
    let next = from;
    await Promise.all(
      Array.from({ length: o.workers }, async () => {
        while (next < to && performance.now() < deadline) {
          const i = next++;
          await one(i);
          sent++;
        }
      }),
    );
  };

  const drain = async (deadline: number): Promise<number> => {
    let left = await unfinishedCount(server.address);
    while (left > 0 && performance.now() < deadline) {
      await new Promise((r) => setTimeout(r, 250));
      left = await unfinishedCount(server.address);
    }
    return left;
  };

  try {
    const started = performance.now();
    const deadline = started + o.maxMs;
    // Warm-up: JIT, statement caches, the first cases; then the baseline heap.
    const warmup = Math.min(500, Math.floor(o.requests / 10));
    await runRequests(0, warmup, deadline);
    await drain(deadline);
    const baseline = await settledHeap(server);
    process.stderr.write(`[soak] baseline heap ${mib(baseline.heapUsed)} MiB after ${warmup} warm-up requests\n`);

    const samples: Array<{ afterRequests: number; heapUsed: number }> = [];
    const chunk = 2_000;
    for (let from = 0; from < o.requests && performance.now() < deadline; from += chunk) {
      await runRequests(warmup + from, warmup + Math.min(o.requests, from + chunk), deadline);
      const h = await server.probeHeap();
      samples.push({ afterRequests: Math.min(o.requests, from + chunk), heapUsed: mib(h.heapUsed)! });
      process.stderr.write(`[soak] ${Math.min(o.requests, from + chunk)} requests, heap ${mib(h.heapUsed)} MiB, errors ${errors}\n`);
    }
    const unfinished = await drain(performance.now() + 120_000);
    const wallMs = performance.now() - started;
    const final = await settledHeap(server);
    const delta = final.heapUsed - baseline.heapUsed;
    // Allocation noise of a warmed-up V8 heap: 10 % of the baseline, at least 8 MiB.
    const tolerance = Math.max(baseline.heapUsed * 0.1, 8 * 2 ** 20);
    const measured = sent - warmup;
    return {
      kind: "soak",
      description: `${measured} requests after ${warmup} warm-up (1 in ${POST_EVERY} an async POST /diagnose?k=1&maxRepairs=0, 1 in ${LIST_EVERY} GET /cases, the rest GET /cases/{id}) from ${o.workers} concurrent clients; scripted model at ${o.modelLatencyMs} ms; server in its own process (tsx, --expose-gc)`,
      machine: machineInfo(),
      config: { ...o, postEvery: POST_EVERY, listEvery: LIST_EVERY },
      requestsSent: measured,
      errors,
      statusCounts,
      casesCreated: ids.length,
      casesUnfinished: unfinished,
      latencyMs: latencySummary(latencies),
      wallMs: Math.round(wallMs),
      heapMiB: { baseline: mib(baseline.heapUsed)!, samples, final: mib(final.heapUsed)!, delta: mib(delta)!, tolerance: mib(tolerance)! },
      backToBaseline: delta <= tolerance,
      serverPeakRssMiB: mib(server.peakRss()),
    };
  } finally {
    await server.stop();
    await model.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}
