import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

/**
 * `medmmv serve --workers N` as an operator starts it: the real CLI in a process of its own
 * (node:cluster primary plus N workers on one port), under the same tsx loader the bench runs
 * under. The bench may not import the test helpers that do the same (a dependency-cruiser rule),
 * and it wants the CLI's own `--workers` path rather than N separately started servers.
 */
const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const START_TIMEOUT_MS = 120_000;
/** serve-workers.ts gives its workers 30 s to stop gracefully; past that the bench stops waiting. */
const STOP_TIMEOUT_MS = 40_000;

export interface ReplicaSet {
  /** The one address every replica listens on, e.g. http://127.0.0.1:41234. */
  address: string;
  workers: number;
  /** The last lines the processes wrote (for error messages). */
  outputTail(): string;
  /** Cases each worker has finished so far (its "case finished" log lines), by process id. */
  casesFinishedByPid(): Map<number, number>;
  /** SIGTERM to the primary, which stops its workers; waits for the whole group to exit. */
  stop(): Promise<void>;
}

/** Process groups still running, so a bench that dies unexpectedly does not leave servers behind. */
const live = new Set<number>();
process.once("exit", () => {
  for (const pgid of live) {
    try {
      process.kill(-pgid, "SIGKILL");
    } catch {
      // already gone
    }
  }
});

function killGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // the group has exited
  }
}

/**
 * Start the replica set and resolve once all N workers have logged "medmmv listening".
 * `env` is the whole environment of the service (nothing of the bench's own leaks in but
 * PATH and HOME), so a MEDMMV_* variable in the shell cannot change what is measured.
 */
export async function startReplicaSet(workers: number, env: Record<string, string>): Promise<ReplicaSet> {
  const args = [...process.execArgv, path.join(ROOT, "src", "cli", "main.ts"), "serve", "--workers", String(workers)];
  // detached: its own process group, so the workers can be killed with the primary if it hangs.
  const child: ChildProcess = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", HOST: "127.0.0.1", PORT: "0", MEDMMV_LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  const pgid = child.pid!;
  live.add(pgid);
  let tail = "";
  const keep = (chunk: Buffer): void => {
    tail = (tail + chunk.toString("utf8")).slice(-20_000);
  };
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  void exited.then(() => live.delete(pgid));

  // The JSON log, line by line, for as long as the set runs (a pipe nobody drains would block it).
  const finished = new Map<number, number>();
  const addresses: string[] = [];
  let onListening = (): void => undefined;
  let pending = "";
  child.stdout!.on("data", (chunk: Buffer) => {
    keep(chunk);
    pending += chunk.toString("utf8");
    let nl: number;
    while ((nl = pending.indexOf("\n")) >= 0) {
      const line = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      if (line.includes('"case finished"')) {
        const pid = (JSON.parse(line) as { pid: number }).pid;
        finished.set(pid, (finished.get(pid) ?? 0) + 1);
      } else if (line.includes('"medmmv listening"')) {
        addresses.push((JSON.parse(line) as { address: string }).address);
        onListening();
      }
    }
  });
  child.stderr!.on("data", keep);

  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    const timer = setTimeout(() => killGroup(pgid, "SIGKILL"), STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
    // The workers exit with the primary (cluster disconnect); anything left of the group goes now.
    killGroup(pgid, "SIGKILL");
    live.delete(pgid);
  };

  try {
    const address = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`serve --workers ${workers} did not listen within ${START_TIMEOUT_MS} ms:\n${tail}`)), START_TIMEOUT_MS);
      onListening = () => {
        if (addresses.length < workers) return;
        clearTimeout(timer);
        if (new Set(addresses).size !== 1) reject(new Error(`the workers listen on different addresses: ${addresses.join(", ")}`));
        else resolve(addresses[0]!);
      };
      void exited.then(() => {
        clearTimeout(timer);
        reject(new Error(`serve --workers ${workers} exited (code ${child.exitCode}, signal ${child.signalCode}) before listening:\n${tail}`));
      });
    });
    return { address, workers, outputTail: () => tail, casesFinishedByPid: () => new Map(finished), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
