/**
 * Embedding the medmmv pipeline in your own program, with your own LangChain chat models.
 *
 *   npx tsx examples/embed-custom-model.ts
 *       offline: a scripted OpenAI-compatible server on 127.0.0.1 plays "your provider"
 *   MY_BASE_URL=http://localhost:11434/v1 MY_MODEL=qwen2.5vl:7b npx tsx examples/embed-custom-model.ts
 *       your own endpoint (here Ollama's OpenAI-compatible one)
 *
 * Any `BaseChatModel` works per role (ChatAnthropic, ChatOllama, ChatBedrockConverse,
 * a fine-tuned model behind your gateway…): hand in the model itself, or a factory that
 * gets the role and the temperature medmmv wants (rollouts run at 0.7, judges at 0).
 * medmmv keeps its own layers around your model: one retry layer, the fair limiter, zod
 * validation with at most two re-asks, usage per agent. Set your model's own retries to 0.
 */
import { fileURLToPath } from "node:url";
import { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import type { Serialized } from "@langchain/core/load/serializable";
import { ChatOpenAI } from "@langchain/openai";
import { loadCaseFile } from "../src/core/intake/load-case.js";
import { intakeSettings } from "../src/core/intake/intake-settings.js";
import { loadConfig } from "../src/core/config.js";
import { Pipeline, pipelineOptions } from "../src/core/workflow/pipeline.js";
import { clinicalScenario } from "../src/scripted/clinical-scenario.js";
import { startScriptedOpenAI, type ScriptedOpenAI } from "../src/scripted/scripted-openai-server.js";

/** Your own callback handler: sees every model run medmmv makes, named medmmv.<agent>. */
class RunCounter extends BaseCallbackHandler {
  name = "run-counter";
  readonly runs = new Map<string, number>();
  override handleChatModelStart(_llm: Serialized, _messages: unknown, _runId: string, _parent?: string, _extra?: unknown, _tags?: string[], metadata?: Record<string, unknown>) {
    const agent = String(metadata?.agent ?? "?");
    this.runs.set(agent, (this.runs.get(agent) ?? 0) + 1);
  }
}

async function main(): Promise<void> {
  let scripted: ScriptedOpenAI | null = null;
  let baseURL = process.env.MY_BASE_URL;
  const modelName = process.env.MY_MODEL ?? "my-own-model";
  if (!baseURL) {
    scripted = await startScriptedOpenAI({ scenario: clinicalScenario({ rolloutAnswers: ["B", "B", "A", "B", "C"], repairsNeeded: { A: 1 }, repairTo: { A: "B" } }) });
    baseURL = scripted.baseUrl;
  }
  try {
    const mine = (want: { temperature: number }) =>
      new ChatOpenAI({ model: modelName, temperature: want.temperature, apiKey: process.env.MY_API_KEY ?? "none", maxRetries: 0, configuration: { baseURL } });
    const counter = new RunCounter();
    // No model variables needed: every role is yours. Config still carries k, repairs, timeouts
    // and retries, read from your environment (MEDMMV_K, MEDMMV_LLM_MAX_ATTEMPTS, …) like the CLI's.
    const config = loadConfig({ ...process.env, MEDMMV_LOG_LEVEL: "silent", MEDMMV_CACHE: "off" });
    const pipeline = new Pipeline(config, { chatModels: { executor: mine, vision: mine, judge: mine({ temperature: 0 }) }, callbacks: [counter] });
    const c = await loadCaseFile(fileURLToPath(new URL("./chest-pain.json", import.meta.url)), intakeSettings(config));
    const { result } = await pipeline.run(c, pipelineOptions(config));
    process.stdout.write(
      [
        scripted ? "(offline: the model's answers are scripted by a local test server)" : `(model ${modelName} at ${baseURL})`,
        `status: ${result.status}; answer: ${result.answer?.option ?? "-"} ${result.answer?.text ?? ""}`,
        `models: ${JSON.stringify(result.provenance.models)}`,
        `model runs seen by your callback handler: ${[...counter.runs].map(([a, n]) => `${a} ×${n}`).join(", ")}`,
        `calls ${result.usage.llmCalls}, tokens ${result.usage.promptTokens} in / ${result.usage.completionTokens} out`,
        "",
      ].join("\n"),
    );
    // Pipeline.run reports a failed case in its result instead of throwing: exit non-zero so
    // that a script or CI running this example sees it.
    if (result.status !== "completed" || counter.runs.size === 0) process.exitCode = 1;
  } finally {
    await scripted?.close();
  }
}

await main();
