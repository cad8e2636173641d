import type { Config } from "../../src/core/config.js";
import { scriptedConfig } from "../../src/scripted/scripted-config.js";
import type { BenchServers } from "./servers.js";

/** What every section gets: the scripted servers (child process) and the run's settings. */
export interface BenchContext {
  servers: BenchServers;
  /** L: the scripted per-call latency of the latency-bound sections (model calls and searches alike). */
  latencyMs: number;
  /** CPU cores of this machine (for CPU-bound estimates). */
  cores: number;
  /** Smaller sample sizes (for a smoke run of the benchmark itself). */
  quick: boolean;
  /** The extra arguments that reproduce this run's settings (e.g. "--latency 100"). */
  argsNote: string;
  /** A Config pointed at the scripted servers, web search on, as the tests build it. */
  config(env?: Record<string, string>): Config;
  log(line: string): void;
}

/**
 * The environment that points a medmmv child process (a `serve` replica, an `eval` run) at
 * the scripted servers, as an operator's environment points it at a provider.
 */
export function scriptedChildEnv(servers: Pick<BenchServers, "modelBaseUrl" | "searchBaseUrl">): Record<string, string> {
  return {
    OPENAI_BASE_URL: servers.modelBaseUrl,
    OPENAI_API_KEY: "bench",
    MEDMMV_MODEL: "scripted-executor",
    MEDMMV_JUDGE_MODEL: "scripted-judge",
    TAVILY_API_KEY: "bench",
    TAVILY_BASE_URL: servers.searchBaseUrl,
  };
}

export function makeConfig(servers: BenchServers, env: Record<string, string> = {}): Config {
  return scriptedConfig(servers.modelBaseUrl, {
    TAVILY_API_KEY: "bench",
    TAVILY_BASE_URL: servers.searchBaseUrl,
    // High enough that the process-wide limiter never binds: the benchmark measures the
    // pipeline against the scripted latency, not against a concurrency cap.
    MEDMMV_MAX_CONCURRENCY: "1024",
    // A slow 2-core machine under load must not turn a 200 ms call into a timeout.
    MEDMMV_LLM_TIMEOUT_MS: "60000",
    ...env,
  });
}
