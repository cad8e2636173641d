import { checkModel, type ModelCheck } from "../core/llm/model-probe.js";
import { EXIT } from "./cli-args.js";
import { modelConfigOrExplain } from "./model-config.js";

const yes = (v: boolean | null) => (v === null ? "?" : v ? "yes" : "no");
/** A mode this provider's integration cannot be asked for is not a "no". */
const mode = (v: boolean | null) => (v === null ? "n/a" : v ? "yes" : "no");

function windowText(w: ModelCheck["contextWindow"]): string {
  if (!w) return "? (the long probe failed)";
  if (w.truncates)
    return `about ${w.tokens} tokens, and the server CUTS longer prompts silently: raise it (Ollama: OLLAMA_CONTEXT_LENGTH, or num_ctx in a Modelfile; llama.cpp: -c) or medmmv fails such calls CONTEXT_TRUNCATED`;
  return w.tokens !== null ? `${w.tokens} tokens (the server refuses longer prompts)` : `at least ${w.probedTokens} tokens`;
}

function formatCheck(c: ModelCheck): string {
  if (c.problem) return `${c.model}: NOT CHECKED — ${c.problem.message}`;
  const so = c.structuredOutput!;
  const integration = c.via === "integration";
  const settings = Object.entries(c.settings);
  const lines = [
    `${c.model} (${integration ? `through LangChain's ${c.provider} integration, ` : ""}${c.requests} requests)`,
    `  temperature             ${yes(c.temperature)}`,
    `  structured output       jsonSchema ${mode(so.jsonSchema)}, functionCalling ${mode(so.functionCalling)}, jsonMode ${mode(so.jsonMode)}`,
    `  images per request      ${c.imagesPerRequest === null ? "2 or more" : c.imagesPerRequest === 0 ? "none (no image input)" : c.imagesPerRequest}`,
    `  context window          ${windowText(c.contextWindow)}`,
    // The integration names the output budget and asks for reasoning itself.
    ...(integration ? [] : [`  output budget parameter ${c.tokenParameter ?? "?"}`, `  reasoning               ${yes(c.reasoning)}`]),
    "  settings to use:",
    ...(settings.length ? settings.map(([k, v]) => `    ${k}='${v}'`) : ["    none: the defaults work"]),
  ];
  return lines.join("\n");
}

/** `medmmv models check`: what each configured model takes, and the settings to use. */
export async function modelsCheckCommand(opts: { json?: boolean }): Promise<number> {
  const config = modelConfigOrExplain();
  if (!config) return EXIT.usage;
  const models = [...new Set(Object.values(config.llm.models).filter((m): m is string => m !== null))];
  const checks: ModelCheck[] = [];
  for (const model of models) checks.push(await checkModel(config.llm, model));
  if (opts.json) {
    const shown = checks.map(({ model, provider, via, temperature, structuredOutput, imagesPerRequest, contextWindow, reasoning, tokenParameter, problem, settings }) => ({ model, provider, via, temperature, structuredOutput, imagesPerRequest, contextWindow, reasoning, tokenParameter, problem, settings }));
    process.stdout.write(JSON.stringify(shown.length === 1 ? shown[0] : shown, null, 2) + "\n");
  } else process.stdout.write(checks.map(formatCheck).join("\n\n") + "\n");
  return checks.some((c) => c.problem !== null) ? EXIT.failed : EXIT.ok;
}
