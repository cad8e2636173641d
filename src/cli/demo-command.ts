import path from "node:path";
import { loadConfig } from "../core/config.js";
import { isMedmmvError } from "../core/contracts/errors.js";
import { loadCaseFile } from "../core/intake/load-case.js";
import { intakeSettings } from "../core/intake/intake-settings.js";
import { Pipeline, pipelineOptions } from "../core/workflow/pipeline.js";
import { DEMO_ISOLATION_ENV, startDemoBackends } from "./demo/demo-backends.js";
import { DEMO_CASES } from "./demo/demo-cases.js";
import { prepareDemoCorpus } from "./demo/demo-corpus.js";
import { writeOfflineReport } from "../server/view/report-command.js";
import { writeResult } from "./diagnose-command.js";
import { ensureWritableDir } from "./demo/writable-dir.js";

/** out/demo-result.json → out/demo-result-<slug>.json for every case after the first. */
function outputFor(file: string, index: number, slug: string): string {
  if (index === 0) return file;
  const ext = path.extname(file);
  return `${file.slice(0, file.length - ext.length)}-${slug}${ext}`;
}

/**
 * `medmmv demo`: the bundled example cases through the real pipeline, over real HTTP,
 * against a scripted OpenAI-compatible server and a scripted Tavily server started in this
 * process. The model's answers are scripted for these cases; everything else (prompts,
 * retries, evidence graph, HD loop, CU) is the product. Each case's result goes to a JSON
 * file and its audit view to a self-contained HTML file beside it (out/demo-report.html
 * first; `opts.out` comes with the CLI's default, out/demo-result.json).
 */
export async function demoCommand(opts: { json?: boolean; out: string }): Promise<number> {
  let outDir: string;
  try {
    outDir = await ensureWritableDir(path.dirname(opts.out), "the demo's results");
  } catch (err) {
    process.stderr.write(`medmmv demo: ${isMedmmvError(err) ? err.message : String(err)}\n`);
    return 2;
  }
  const backends = await startDemoBackends();
  let corpus: Awaited<ReturnType<typeof prepareDemoCorpus>> | null = null;
  try {
    // Without a Tavily key of the user's, literature comes from the bundled corpus, searched offline (MEDMMV_SEARCH=local).
    corpus = loadConfig({ ...process.env, ...DEMO_ISOLATION_ENV }).search.apiKey ? null : await prepareDemoCorpus(outDir);
    const config = loadConfig({ ...process.env, ...backends.env, ...corpus?.env });
    if (!opts.json)
      process.stdout.write(
        [
          "medmmv demo — the model answers below are SCRIPTED by a local OpenAI-compatible test server;",
          "the pipeline around them (prompts, retries, evidence graph, hallucination detection, repair, CU scoring) is real.",
          "",
        ].join("\n"),
      );
    const pipeline = new Pipeline(config);
    let failed = false;
    for (const [i, demo] of DEMO_CASES.entries()) {
      const c = await loadCaseFile(demo.file, intakeSettings(config));
      const { result, fullEvidenceGraph } = await pipeline.run(c, pipelineOptions(config));
      failed ||= result.status === "failed";
      const out = opts.out ? outputFor(opts.out, i, demo.slug) : undefined;
      // --json prints the main case only, so the output stays one JSON document.
      if (i === 0 || !opts.json) await writeResult(result, { json: opts.json, out }, fullEvidenceGraph);
      const reportFile = outputFor(path.join(path.dirname(opts.out), "demo-report.html"), i, demo.slug);
      // The prepared case is the view's case input as it is (images embedded).
      const report = await writeOfflineReport({ result, fullEvidenceGraph, caseInput: c }, reportFile);
      if (!opts.json) process.stdout.write(`${out ? `Result written to ${out}\n` : ""}Audit view (opens offline in a browser): ${report.file}\n\n`);
    }
    if (!opts.json)
      process.stdout.write(
        [
          "Next: `npm run demo -- --serve` runs the REST API, the event stream and the audit view in your browser, still scripted.",
          "With a live model: OPENAI_BASE_URL=https://…/v1 OPENAI_API_KEY=… MEDMMV_MODEL=… npx medmmv diagnose examples/chest-pain.json",
          "",
        ].join("\n"),
      );
    return failed ? 1 : 0;
  } catch (err) {
    process.stderr.write(`medmmv demo: ${isMedmmvError(err) ? `[${err.code}] ${err.message}` : String(err)}\n`);
    return 1;
  } finally {
    await Promise.all([backends.close(), corpus?.dispose()]);
  }
}
