import { startScriptedOpenAI } from "../../scripted/scripted-openai-server.js";
import { startScriptedTavily } from "../../scripted/scripted-tavily-server.js";
import { demoScenario, demoSearchResults } from "../../scripted/scenarios/demo-scenario.js";

/**
 * The model name every role gets in the demo. It is what results carry in
 * `provenance.models`, and what the audit view reads to show its "scripted model" banner
 * (src/server/view/client/scripted-banner.ts): the page learns it from the result, not from a flag.
 */
export const DEMO_MODEL = "scripted-demo";

/**
 * The user's settings that would take the demo off its scripted servers or send its runs
 * elsewhere, blanked (loadConfig reads "" as unset): an exported Azure key would make every
 * role an AzureChatOpenAI on the user's resource, and LANGSMITH_TRACING would have the
 * start-up warning speak of traces the demo does not send (see untraceDemoProcess).
 */
export const DEMO_ISOLATION_ENV: Readonly<Record<string, string>> = { AZURE_OPENAI_API_KEY: "", LANGSMITH_TRACING: "" };

/** LangChain's own tracing switches, which it reads from process.env by itself (not from our Config). */
const TRACING_VARS = ["LANGSMITH_TRACING_V2", "LANGCHAIN_TRACING_V2", "LANGSMITH_TRACING", "LANGCHAIN_TRACING"] as const;

/**
 * Turns LangChain's tracing off for this process: the demo's runs are scripted and are not
 * worth a trace. The demo commands own their process, so nothing is restored.
 */
function untraceDemoProcess(): void {
  for (const v of TRACING_VARS) delete process.env[v];
}

export interface DemoBackends {
  /** Environment that points a Config at the scripted servers (merged over the real env). */
  env: Record<string, string>;
  close(): Promise<void>;
}

/**
 * The scripted OpenAI-compatible and Tavily servers of the demo, on 127.0.0.1 in this
 * process. Their answers are written for the bundled example cases
 * (src/scripted/scenarios/); everything that talks to them is the product. Starting them
 * also turns LangChain's tracing off for the process.
 */
export async function startDemoBackends(): Promise<DemoBackends> {
  untraceDemoProcess();
  const model = await startScriptedOpenAI({ latencyMs: 30, scenario: demoScenario(), models: [DEMO_MODEL] });
  const search = await startScriptedTavily({ latencyMs: 20, results: demoSearchResults }).catch(async (err: unknown) => {
    await model.close();
    throw err;
  });
  return {
    env: {
      ...DEMO_ISOLATION_ENV,
      OPENAI_BASE_URL: model.baseUrl,
      OPENAI_API_KEY: "demo",
      MEDMMV_MODEL: DEMO_MODEL,
      MEDMMV_VISION_MODEL: DEMO_MODEL,
      MEDMMV_JUDGE_MODEL: DEMO_MODEL,
      TAVILY_API_KEY: "demo",
      TAVILY_BASE_URL: search.baseUrl,
    },
    close: async () => {
      await Promise.all([model.close(), search.close()]);
    },
  };
}
