import os from "node:os";

/**
 * The machine a measurement ran on, as BENCHMARKS.md and the load/soak artefacts behind
 * RELIABILITY.md record it. One description for all of them, so the two reports agree.
 */
export interface MachineInfo {
  cpuModel: string;
  cores: number;
  /** Total memory, GiB, one decimal. */
  memoryGiB: number;
  node: string;
  platform: string;
  /** 1, 5 and 15 minute load averages when the description was taken. */
  loadavg: number[];
  /** ISO time of the description. */
  at: string;
}

export function machineInfo(): MachineInfo {
  const cpus = os.cpus();
  return {
    cpuModel: cpus[0]?.model.trim() ?? "unknown",
    cores: cpus.length,
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    loadavg: os.loadavg(),
    at: new Date().toISOString(),
  };
}

/** One line: "AMD EPYC, 2 cores, 23.5 GiB memory, Node v20.20.2, linux 6.1 x64". */
export function describeMachine(m: MachineInfo): string {
  return `${m.cpuModel}, ${m.cores} cores, ${m.memoryGiB} GiB memory, Node ${m.node}, ${m.platform}`;
}
