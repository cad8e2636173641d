/**
 * Load: N concurrent synchronous `POST /diagnose` (each waits for its DiagnosisResult)
 * against the scripted model answering every call after a fixed latency. Reports errors
 * (must be 0), latency percentiles, throughput and the server's peak RSS, per setting of
 * MEDMMV_MAX_CONCURRENCY (model calls in flight per process).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { DiagnosisResult } from "../src/core/contracts/diagnosis-result.js";
import { clinicalScenario } from "../src/scripted/clinical-scenario.js";
import { startScriptedOpenAI } from "../src/scripted/scripted-openai-server.js";
import { api, latencySummary, mib, serverEnv, startServerChild } from "./lib.js";
import { machineInfo, type MachineInfo } from "../src/scripted/machine-info.js";

export interface LoadOptions {
  concurrency: number;
  modelLatencyMs: number;
  /** MEDMMV_MAX_CONCURRENCY values to run, one server each. */
  llmConcurrency: number[];
}

export interface LoadRun {
  llmConcurrency: number;
  requests: number;
  errors: number;
  statusCounts: Record<string, number>;
  resultStatuses: Record<string, number>;
  latencyMs: ReturnType<typeof latencySummary>;
  wallMs: number;
  throughputPerSec: number;
  modelCalls: number;
  modelCallsPerCase: number;
  peakModelCallsInFlight: number;
  serverPeakRssMiB: number | null;
  serverHeapAfterMiB: number | null;
}

export interface LoadReport {
  kind: "load";
  description: string;
  machine: MachineInfo;
  config: { concurrency: number; modelLatencyMs: number; k: number; maxRepairs: number; store: string };
  runs: LoadRun[];
}

const K = 5;
const MAX_REPAIRS = 3;

function caseBody(i: number) {
  return {
    question: "What is the most likely diagnosis?",
    // Each case its own text: the response cache must not turn the load into cache hits.
    notes: `Load case ${i}. A 58-year-old man presents with crushing substernal chest pain radiating to the left arm for 40 minutes. He is diaphoretic and nauseated. ECG shows ST elevation in leads II, III and aVF. Troponin I is 2.4 ng/mL.`,
    options: { A: "Acute pericarditis", B: "Inferior ST-elevation myocardial infarction", C: "Aortic dissection", D: "Pulmonary embolism" },
    patient: { age: 58, sex: "male" },
  };
}

async function runOnce(o: LoadOptions, llmConcurrency: number): Promise<LoadRun> {
  // Three distinct paths per case, one needing a repair: every stage of the pipeline is loaded.
  const model = await startScriptedOpenAI({ scenario: clinicalScenario({ rolloutAnswers: ["B", "B", "A", "B", "C"], repairsNeeded: { A: 1 } }), latencyMs: o.modelLatencyMs });
  const dataDir = await mkdtemp(path.join(tmpdir(), "medmmv-load-"));
  const server = await startServerChild(serverEnv(model.baseUrl, dataDir, { MEDMMV_K: String(K), MEDMMV_MAX_REPAIRS: String(MAX_REPAIRS), MEDMMV_MAX_CONCURRENCY: String(llmConcurrency) }));
  try {
    // One warm-up case: first-call costs (JIT, prompt parsing, SQLite statements) are not load.
    const warm = await api(server.address, "/diagnose", { method: "POST", json: caseBody(-1) });
    if (warm.status !== 201) throw new Error(`warm-up case failed: HTTP ${warm.status} ${await warm.text()}`);
    model.reset();

    const latencies: number[] = [];
    const statusCounts: Record<string, number> = {};
    const resultStatuses: Record<string, number> = {};
    let errors = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: o.concurrency }, async (_, i) => {
        const t0 = performance.now();
        let key: string;
        try {
          const res = await api(server.address, "/diagnose", { method: "POST", json: caseBody(i) });
          const text = await res.text();
          key = String(res.status);
          if (res.status === 201) {
            const r = DiagnosisResult.parse(JSON.parse(text));
            resultStatuses[r.status] = (resultStatuses[r.status] ?? 0) + 1;
            if (r.status !== "completed") errors++;
          } else {
            errors++;
          }
        } catch (err) {
          key = `network: ${(err as Error).message}`;
          errors++;
        }
        latencies.push(performance.now() - t0);
        statusCounts[key] = (statusCounts[key] ?? 0) + 1;
      }),
    );
    const wallMs = performance.now() - started;
    const stats = model.stats();
    const heap = await server.probeHeap().catch(() => null);
    return {
      llmConcurrency,
      requests: o.concurrency,
      errors,
      statusCounts,
      resultStatuses,
      latencyMs: latencySummary(latencies),
      wallMs: Math.round(wallMs),
      throughputPerSec: Math.round((o.concurrency / (wallMs / 1000)) * 100) / 100,
      modelCalls: stats.total,
      modelCallsPerCase: Math.round((stats.total / o.concurrency) * 10) / 10,
      peakModelCallsInFlight: stats.peakInFlight,
      serverPeakRssMiB: mib(server.peakRss()),
      serverHeapAfterMiB: heap ? mib(heap.heapUsed) : null,
    };
  } finally {
    await server.stop();
    await model.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

export async function runLoad(o: LoadOptions): Promise<LoadReport> {
  const runs: LoadRun[] = [];
  for (const c of o.llmConcurrency) {
    process.stderr.write(`[load] ${o.concurrency} concurrent POST /diagnose, model latency ${o.modelLatencyMs} ms, MEDMMV_MAX_CONCURRENCY=${c}…\n`);
    const run = await runOnce(o, c);
    process.stderr.write(`[load]   errors ${run.errors}, p50 ${run.latencyMs.p50} ms, p99 ${run.latencyMs.p99} ms, ${run.throughputPerSec} cases/s, peak RSS ${run.serverPeakRssMiB} MiB\n`);
    runs.push(run);
  }
  return {
    kind: "load",
    description: `${o.concurrency} concurrent synchronous POST /diagnose (k=${K}, maxRepairs=${MAX_REPAIRS}; 5 rollouts → 3 distinct paths, one repaired) against the scripted model at ${o.modelLatencyMs} ms per call; server in its own process (tsx), SQLite store`,
    machine: machineInfo(),
    config: { concurrency: o.concurrency, modelLatencyMs: o.modelLatencyMs, k: K, maxRepairs: MAX_REPAIRS, store: "sqlite" },
    runs,
  };
}
