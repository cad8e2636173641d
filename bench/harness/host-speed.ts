import { runNode } from "./cli-process.js";
import { median } from "./stats.js";

/**
 * How fast this host runs Node today, measured the same way in every report. A shared 2-core
 * machine is not the same machine from one day to the next (the same tree measured a critical
 * path of 1.050 and `medmmv --help` in 53 ms one day, 1.067 and about 170 ms the next): these
 * two figures let a reader tell a change of the code from a change of the host.
 */
export interface HostSpeed {
  /** Spawn to exit of `node -e 0`, median of 5: what every CLI start pays before its own code. */
  nodeStartMs: number;
  /** A fixed single-threaded workload (JSON written and read back, objects allocated: the shape of a model reply's handling), median of 5. */
  workloadMs: number;
}

/** Records shaped like a model reply's JSON, always the same ones. */
function fixedPayload(): unknown {
  return Array.from({ length: 2_000 }, (_, i) => ({
    id: `item-${i}`,
    choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: `{"answer":"${"ABCDE"[i % 5]}","reasoning":"${"step ".repeat(40)}"}` } }],
    usage: { prompt_tokens: 500 + (i % 97), completion_tokens: 80 + (i % 13), total_tokens: 580 + (i % 110) },
  }));
}

function workloadOnce(payload: unknown): number {
  const t0 = performance.now();
  for (let i = 0; i < 10; i++) JSON.parse(JSON.stringify(payload));
  return performance.now() - t0;
}

/** Spawn to exit of `node -e 0`, `runs` times: Node's own start, what every CLI start pays first. */
export async function nodeStartTimes(runs: number): Promise<number[]> {
  const starts: number[] = [];
  for (let i = 0; i < runs; i++) {
    const { code, ms } = await runNode(["-e", "0"]);
    if (code !== 0) throw new Error(`node -e 0 exited ${code}`);
    starts.push(ms);
  }
  return starts;
}

export async function measureHostSpeed(): Promise<HostSpeed> {
  const starts = await nodeStartTimes(5);
  const payload = fixedPayload();
  workloadOnce(payload); // compiled and warmed before the timed runs
  const runs = Array.from({ length: 5 }, () => workloadOnce(payload));
  return { nodeStartMs: median(starts), workloadMs: median(runs) };
}
