import { afterAll, beforeAll, beforeEach } from "vitest";
import type { Config } from "../../src/core/config.js";
import { clinicalScenario } from "../../src/scripted/clinical-scenario.js";
import { startScriptedOpenAI, type Scenario, type ScriptedOpenAI } from "../../src/scripted/scripted-openai-server.js";
import { startScriptedTavily, type ScriptedTavily } from "../../src/scripted/scripted-tavily-server.js";
import { scriptedConfig } from "../../src/scripted/scripted-config.js";

export interface ScriptedServers {
  readonly model: ScriptedOpenAI;
  /** Only when the fixture was asked for search. */
  readonly search: ScriptedTavily;
  /** A Config pointed at the servers (web search on when there is a search server). */
  config(env?: Record<string, string>): Config;
}

/**
 * The scripted model server (and, with `search`, the scripted Tavily server) of one test
 * file: started before its tests, closed after them, and before each test set back to no
 * faults, no latency and zero counters, so no test inherits another's settings.
 */
export function useScriptedServers(opts: { scenario?: Scenario; search?: boolean } = {}): ScriptedServers {
  let model: ScriptedOpenAI | undefined;
  let search: ScriptedTavily | undefined;
  beforeAll(async () => {
    model = await startScriptedOpenAI({ scenario: opts.scenario ?? clinicalScenario() });
    if (opts.search) search = await startScriptedTavily({});
  });
  afterAll(async () => {
    await model?.close();
    await search?.close();
  });
  beforeEach(() => {
    model!.clearFaults();
    model!.setLatency(0);
    model!.reset();
    search?.clearFaults();
    search?.setLatency(0);
    search?.reset();
  });
  return {
    get model() {
      return model!;
    },
    get search() {
      if (!search) throw new Error("this fixture has no search server: useScriptedServers({ search: true })");
      return search;
    },
    config(env = {}) {
      return scriptedConfig(model!.baseUrl, search ? { TAVILY_API_KEY: "t", TAVILY_BASE_URL: search.baseUrl, ...env } : env);
    },
  };
}
