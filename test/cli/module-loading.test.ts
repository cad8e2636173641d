import type { ChildProcess } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { startScriptedOpenAI, type ScriptedOpenAI } from "../../src/scripted/scripted-openai-server.js";
import { clinicalScenario } from "../../src/scripted/clinical-scenario.js";
import { medmmvCli } from "../support/medmmv-cli.js";
import { useTempDir } from "../support/temp-dir.js";
import { syntheticCt } from "../core/intake/dicom/dicom-fixtures.js";

// What each command loads, recorded in the CLI's own process as a user runs it: a command
// pays at start for every module it imports, so `--help` must not load the pipeline,
// `diagnose` must not load the server or the eval harness, `serve` loads Redis's clients only
// for Redis, and nothing may load an image codec before an image needs one.

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const TRACE = pathToFileURL(path.join(ROOT, "test/support/module-trace.mjs")).href;
const tmp = useTempDir("medmmv-modules-");
/** Written into each build by bin/cli-bundle.mjs: the sources in each output file. */
const SOURCES_FILE = "sources.json";

let model: ScriptedOpenAI;
beforeAll(async () => {
  model = await startScriptedOpenAI({ scenario: clinicalScenario({ rolloutAnswers: ["B"] }) });
});
afterAll(() => model.close());

/**
 * The CLI with the module trace preloaded: its result and the modules it loaded, repository-
 * relative. A chunk of the CLI's bundle (bin/cli-bundle.mjs) stands for the sources built into
 * it, so the list reads the same whether the CLI ran from its bundle or through tsx.
 */
async function traced(args: string[], env: Record<string, string> = {}, started?: (child: ChildProcess) => void) {
  const file = path.join(tmp(), "modules.txt");
  await writeFile(file, "");
  const run = await medmmvCli(args, { ...env, NODE_OPTIONS: `--import=${TRACE}`, MODULE_TRACE_FILE: file }, "", started);
  const root = pathToFileURL(ROOT).href;
  const loaded = [...new Set((await readFile(file, "utf8")).split("\n").filter(Boolean))].map((u) => (u.startsWith(root) ? u.slice(root.length) : u));
  const modules = new Set<string>();
  for (const m of loaded) {
    const chunk = /^(node_modules\/\.cache\/medmmv-cli\/[^/]+)\/([^/]+\.js)$/.exec(m);
    if (!chunk) {
      modules.add(m);
      continue;
    }
    const sources = JSON.parse(await readFile(path.join(ROOT, chunk[1]!, SOURCES_FILE), "utf8")) as Record<string, string[]>;
    for (const s of sources[chunk[2]!] ?? []) modules.add(s);
  }
  return { ...run, modules: [...modules] };
}

/** The image codecs: sharp (libvips) and the DICOM parser and decoders (dcmjs, dcmjs-imaging and its WebAssembly codecs). */
const CODEC = /node_modules\/(sharp|@img\/sharp[^/]*|dcmjs|dcmjs-imaging|dcmjs-codecs)\/|src\/core\/intake\/dicom\/render-worker\.mjs/;
const modelEnv = () => ({ OPENAI_BASE_URL: model.baseUrl, OPENAI_API_KEY: "k", MEDMMV_MODEL: "scripted" });

/** The chest-pain example without its picture, or with a synthetic CT slice (DICOM) instead. */
async function exampleCase(image: "none" | "dicom"): Promise<string> {
  const c = JSON.parse(await readFile(path.join(ROOT, "examples/chest-pain.json"), "utf8")) as { images?: unknown[] };
  const file = path.join(tmp(), `${image}.json`);
  if (image === "dicom") {
    await writeFile(path.join(path.dirname(file), "ct.dcm"), syntheticCt().file);
    c.images = [{ id: "ct1", path: "ct.dcm", caption: "synthetic CT slice" }];
  } else delete c.images;
  await writeFile(file, JSON.stringify(c));
  return file;
}

describe("what a command loads", () => {
  it("--help loads the command table alone: no pipeline, model client, store, server, eval or codec", async () => {
    const r = await traced(["--help"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/diagnose/);
    expect(r.modules).toContain("src/cli/main.ts");
    const ours = r.modules.filter((m) => m.startsWith("src/"));
    expect(ours.filter((m) => !m.startsWith("src/cli/") && m !== "src/core/version.ts" && m !== "src/core/contracts/errors.ts")).toEqual([]);
    expect(r.modules.filter((m) => /node_modules\/(@langchain|zod|openai|fastify|pg|better-sqlite3)\//.test(m) || CODEC.test(m))).toEqual([]);
  });

  it("diagnose on a case without images runs the pipeline without the server, the eval harness or any image codec", async () => {
    const r = await traced(["diagnose", await exampleCase("none"), "--k", "2", "--json"], modelEnv());
    expect(r.stderr).not.toMatch(/Error/);
    expect(r.code).toBe(0);
    // The trace saw the run: the pipeline and the model client were loaded.
    expect(r.modules).toContain("src/core/workflow/pipeline.ts");
    expect(r.modules.some((m) => m.includes("node_modules/openai/"))).toBe(true);
    expect(r.modules.filter((m) => CODEC.test(m))).toEqual([]);
    expect(r.modules.filter((m) => /^src\/(server|eval)\//.test(m) || /node_modules\/fastify\//.test(m))).toEqual([]);
    // Its models are on an OpenAI-compatible endpoint: Anthropic's and Gemini's integrations are not loaded.
    expect(r.modules.filter((m) => /node_modules\/(@anthropic-ai|@langchain\/anthropic|@google\/generative-ai|@langchain\/google-genai)\//.test(m))).toEqual([]);
  });

  it("eval --method cot loads no web search client, no Postgres client and no LangGraph, and the summary page's renderer only to write the page", async () => {
    const items = path.join(tmp(), "items.jsonl");
    const options = { A: "Aortic dissection", B: "Acute coronary syndrome", C: "Pulmonary embolism" };
    await writeFile(items, ["q1", "q2"].map((id) => JSON.stringify({ id, question: "Most likely diagnosis?", notes: "Chest pain radiating to the left arm.", options, answer: "B" })).join("\n") + "\n");
    const out = path.join(tmp(), "eval-out");
    // A search key is configured: before, the search provider it selects imported axios at start-up.
    const r = await traced(["eval", "--dataset", "jsonl", "--input", items, "--method", "cot", "--out", out], { ...modelEnv(), TAVILY_API_KEY: "k", TAVILY_BASE_URL: "http://127.0.0.1:9" });
    expect(r.stderr).not.toMatch(/Error/);
    expect(r.code).toBe(0);
    // CoT never searches: neither the Tavily client nor the axios it posts through is loaded.
    expect(r.modules.filter((m) => /node_modules\/(axios|@tavily\/core|form-data|mime-db)\//.test(m))).toEqual([]);
    // It never runs the pipeline's workflow: neither LangGraph nor the workflow's nodes are loaded.
    expect(r.modules.filter((m) => /node_modules\/@langchain\/langgraph\/|^src\/core\/workflow\/(graph|state)\.ts$|^src\/core\/workflow\/nodes\//.test(m))).toEqual([]);
    // Its response cache is in the embedded SQLite store: the Postgres client is not loaded.
    expect(r.modules.filter((m) => /node_modules\/(pg|pg-pool|pg-protocol)\//.test(m))).toEqual([]);
    // The page was written, so its renderer was loaded (while the first call was out: summary-page.ts).
    expect(r.modules).toContain("src/eval/summary-html.ts");
    expect(await readFile(path.join(out, "summary.html"), "utf8")).toMatch(/<table/);
  });

  it("serve without REDIS_URL listens without loading BullMQ, ioredis or the Redis semaphore", async () => {
    // Stopped (SIGTERM, a clean shutdown) once it says it listens: what it loaded by then is what every start pays.
    const stopOnceListening = (child: ChildProcess) => {
      let out = "";
      child.stdout!.on("data", (c: Buffer) => {
        out += c.toString("utf8");
        if (out.includes('"medmmv listening"') && child.exitCode === null && !child.killed) child.kill("SIGTERM");
      });
    };
    const r = await traced(["serve"], { ...modelEnv(), MEDMMV_DATA_DIR: path.join(tmp(), "serve-data"), HOST: "127.0.0.1", PORT: "0" }, stopOnceListening);
    expect(r.stdout).toContain('"medmmv listening"');
    expect(r.code).toBe(0);
    expect(r.modules).toContain("src/server/server.ts");
    expect(r.modules.filter((m) => /node_modules\/(bullmq|ioredis|@ioredis\/commands|redis-semaphore|msgpackr|cron-parser)\//.test(m) || /^src\/server\/engine\/(bullmq-engine|redis-provider-budget|redis-connection)\.ts$/.test(m))).toEqual([]);
  });

  it("the same case with a DICOM image loads the codecs when the image needs them (the trace sees them)", async () => {
    const r = await traced(["diagnose", await exampleCase("dicom"), "--k", "2", "--json"], modelEnv());
    expect(r.stderr).not.toMatch(/Error/);
    expect(r.code).toBe(0);
    // The DICOM decoders load in the renderer's worker thread; the trace covers it too.
    for (const codec of ["node_modules/dcmjs/", "node_modules/dcmjs-imaging/", "node_modules/sharp/", "src/core/intake/dicom/render-worker.mjs"]) {
      expect(r.modules.some((m) => m.includes(codec))).toBe(true);
    }
  });
});
