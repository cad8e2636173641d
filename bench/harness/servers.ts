import { fork, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { BenchScenarioOptions } from "./bench-scenario.js";

export type ChildRequest =
  | { id: number; type: "scenario"; options: BenchScenarioOptions }
  | { id: number; type: "latency"; modelMs: number; searchMs: number }
  | { id: number; type: "reset" }
  | { id: number; type: "stats"; withLog: boolean }
  | { id: number; type: "close" };

export interface ChildStats {
  model: { total: number; byAgent: Record<string, number>; peakInFlight: number; temperatures: Array<number | null>; log: Array<{ agent: string; start: number; end: number | null }> };
  search: { total: number; peakInFlight: number; log: Array<{ agent: string; start: number; end: number | null }> };
  /** Per agent, since the last reset: calls and the characters of their prompts (text; image data URLs). */
  promptByAgent: Record<string, { calls: number; textChars: number; imageChars: number; reusedPrefixChars: number; newLineChars: number }>;
  cpuMicros: number;
}

export type ChildReply =
  | { id: number; type: "ready"; modelBaseUrl: string; searchBaseUrl: string; cpuMicros: number }
  | { id: number; type: "ok"; cpuMicros: number }
  | ({ id: number; type: "stats" } & ChildStats);

/** The scripted model + search servers in a child process, and a typed handle on them. */
export interface BenchServers {
  modelBaseUrl: string;
  searchBaseUrl: string;
  setScenario(o: BenchScenarioOptions): Promise<void>;
  /** Same latency L for model calls and searches: both are links of the critical path. */
  setLatency(ms: number): Promise<void>;
  reset(): Promise<void>;
  stats(withLog?: boolean): Promise<ChildStats>;
  /** CPU time (user + system, µs) the server process has used so far. */
  cpuMicros(): Promise<number>;
  close(): Promise<void>;
}

export async function startBenchServers(): Promise<BenchServers> {
  // fork() inherits execArgv, so the child runs under the same tsx loader as the bench.
  const child: ChildProcess = fork(fileURLToPath(new URL("./server-child.ts", import.meta.url)), [], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const pending = new Map<number, (r: ChildReply) => void>();
  let nextId = 1;
  const ready = new Promise<Extract<ChildReply, { type: "ready" }>>((resolve, reject) => {
    child.once("error", reject);
    child.once("exit", (code) => reject(new Error(`scripted server child exited early (code ${code})`)));
    pending.set(0, (r) => resolve(r as Extract<ChildReply, { type: "ready" }>));
  });
  child.on("message", (raw) => {
    const r = raw as ChildReply;
    const fn = pending.get(r.id);
    pending.delete(r.id);
    fn?.(r);
  });
  const ask = <T extends ChildReply>(req: Omit<ChildRequest, "id"> & { type: ChildRequest["type"] }): Promise<T> =>
    new Promise((resolve) => {
      const id = nextId++;
      pending.set(id, (r) => resolve(r as T));
      child.send({ ...req, id });
    });
  const r = await ready;
  child.removeAllListeners("exit");
  return {
    modelBaseUrl: r.modelBaseUrl,
    searchBaseUrl: r.searchBaseUrl,
    setScenario: async (options) => void (await ask({ type: "scenario", options } as ChildRequest)),
    setLatency: async (ms) => void (await ask({ type: "latency", modelMs: ms, searchMs: ms } as ChildRequest)),
    reset: async () => void (await ask({ type: "reset" } as ChildRequest)),
    stats: async (withLog = false) => {
      const s = await ask<Extract<ChildReply, { type: "stats" }>>({ type: "stats", withLog } as ChildRequest);
      return { model: s.model, search: s.search, promptByAgent: s.promptByAgent, cpuMicros: s.cpuMicros };
    },
    cpuMicros: async () => (await ask<Extract<ChildReply, { type: "stats" }>>({ type: "stats", withLog: false } as ChildRequest)).cpuMicros,
    close: () =>
      new Promise<void>((resolve) => {
        child.once("exit", () => resolve());
        child.send({ type: "close", id: nextId++ });
      }),
  };
}
