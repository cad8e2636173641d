import { fileURLToPath } from "node:url";
import { loadConfig } from "../config.js";
import { isMedmmvError } from "../errors.js";
import { loadCaseFile } from "../case/load-case.js";
import { Pipeline, pipelineOptions } from "../graph/pipeline.js";
import { startScriptedOpenAI } from "../../test/support/scripted-openai-server.js";
import { startScriptedTavily } from "../../test/support/scripted-tavily-server.js";
import { clinicalScenario } from "../../test/support/clinical-scenario.js";
import { writeResult } from "./diagnose-command.js";
import { prepareDemoCorpus } from "./demo-corpus.js";

const DEMO_CASE = fileURLToPath(new URL("../../examples/chest-pain.json", import.meta.url));

/**
 * `medmmv demo`: the real pipeline, over real HTTP, against a scripted OpenAI-compatible
 * server and a scripted Tavily server started in this process. The model's answers are
 * scripted; everything else (prompts, retries, evidence graph, HD loop, CU) is the product.
 */
export async function demoCommand(opts: { json?: boolean; out?: string }): Promise<number> {
  const model = await startScriptedOpenAI({
    latencyMs: 30,
    // Rollout 3 goes astray (A); the detector flags it once and the repair brings it to B.
    scenario: clinicalScenario({ rolloutAnswers: ["B", "B", "A", "B", "C"], repairsNeeded: { A: 1, C: 2 }, repairTo: { A: "B" }, coherence: { B: 0.9, C: 0.6 } }),
  });
  const search = await startScriptedTavily({ latencyMs: 20 });
  let corpus: Awaited<ReturnType<typeof prepareDemoCorpus>> | null = null;
  try {
    // Without a Tavily key of the user's, literature comes from the bundled corpus, searched offline (MEDMMV_SEARCH=local).
    corpus = loadConfig().search.apiKey ? null : await prepareDemoCorpus();
    const config = loadConfig({
      ...process.env,
      OPENAI_BASE_URL: model.baseUrl,
      OPENAI_API_KEY: "demo",
      MEDMMV_MODEL: "scripted-demo-model",
      MEDMMV_VISION_MODEL: "scripted-demo-model",
      MEDMMV_JUDGE_MODEL: "scripted-demo-model",
      TAVILY_API_KEY: "demo",
      TAVILY_BASE_URL: search.baseUrl,
      ...corpus?.env,
    });
    const c = await loadCaseFile(DEMO_CASE, { maxBytes: config.http.maxImageBytes, maxPixels: config.http.maxImagePixels });
    const { result } = await new Pipeline(config).run(c, pipelineOptions(config));
    if (!opts.json)
      process.stdout.write(
        [
          "medmmv demo — the model answers below are SCRIPTED by a local OpenAI-compatible test server;",
          "the pipeline around them (prompts, retries, evidence graph, hallucination detection, repair, CU scoring) is real.",
          `To use a live model: OPENAI_BASE_URL=https://…/v1 OPENAI_API_KEY=… MEDMMV_MODEL=… npx medmmv diagnose examples/chest-pain.json`,
          "",
        ].join("\n"),
      );
    await writeResult(result, opts);
    if (!opts.json) process.stdout.write(`\nFull result written to ${opts.out}\n`);
    return result.status === "failed" ? 1 : 0;
  } catch (err) {
    process.stderr.write(`medmmv demo: ${isMedmmvError(err) ? `[${err.code}] ${err.message}` : String(err)}\n`);
    return 1;
  } finally {
    await Promise.all([model.close(), search.close(), corpus?.dispose()]);
  }
}
