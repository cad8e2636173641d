import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { isMedmmvError } from "../core/contracts/errors.js";
import { loadCaseFile } from "../core/intake/load-case.js";
import { intakeSettings } from "../core/intake/intake-settings.js";
import { Pipeline, pipelineOptions } from "../core/workflow/pipeline.js";
import { openSearchProvider } from "../core/search/create-search-provider.js";
import type { SearchProvider } from "../core/search/search-provider.js";
import { EXIT } from "./cli-args.js";
import { modelConfigOrExplain } from "./model-config.js";
import { formatSummary } from "./format-summary.js";
import { printProviderReasons } from "./provider-reasons.js";

export interface DiagnoseOptions {
  k?: number;
  maxRepairs?: number;
  adaptive?: boolean;
  json?: boolean;
  out?: string;
}

export async function diagnoseCommand(file: string, opts: DiagnoseOptions): Promise<number> {
  const config = modelConfigOrExplain();
  if (!config) return EXIT.usage;
  let c;
  try {
    // A FHIR Bundle file is read with the server's FHIR limits, as POST /diagnose reads one.
    c = await loadCaseFile(file, { ...intakeSettings(config), fhir: config.fhir });
  } catch (err) {
    process.stderr.write(`medmmv: ${file}: ${isMedmmvError(err) ? err.message : String(err)}\n`);
    return 2;
  }
  const ctrl = new AbortController();
  const onSigint = () => ctrl.abort();
  process.once("SIGINT", onSigint);
  let search: SearchProvider | undefined;
  try {
    search = await openSearchProvider(config);
    // The CLI's user is the operator: the provider's own reason for a refused call goes to stderr.
    const pipeline = new Pipeline(config, { search, callbacks: [printProviderReasons()] });
    const { result, fullEvidenceGraph } = await pipeline.run(c, pipelineOptions(config, { k: opts.k, maxRepairs: opts.maxRepairs, adaptive: opts.adaptive }), { signal: ctrl.signal });
    await writeResult(result, opts, fullEvidenceGraph);
    if (result.status !== "failed") return EXIT.ok;
    return ctrl.signal.aborted ? EXIT.interrupted : EXIT.failed;
  } catch (err) {
    process.stderr.write(`medmmv: ${isMedmmvError(err) ? `[${err.code}] ${err.message}` : String(err)}\n`);
    // Ctrl-C: the handler above replaced Node's own exit, so say "interrupted" ourselves.
    return ctrl.signal.aborted ? EXIT.interrupted : EXIT.failed;
  } finally {
    process.off("SIGINT", onSigint);
    await search?.close?.().catch(() => undefined);
  }
}

/**
 * Prints the result, and with `out` writes it to a file with the full evidence graph E beside
 * it (`fullEvidenceGraph`, one extra field: the file still reads as a DiagnosisResult), so
 * `medmmv report` shows everything the agents found, not only the selected path's E_p.
 */
export async function writeResult(result: import("../core/contracts/diagnosis-result.js").DiagnosisResult, opts: { json?: boolean; out?: string }, fullEvidenceGraph: Record<string, unknown> | null = null): Promise<void> {
  if (opts.out) {
    await mkdir(path.dirname(path.resolve(opts.out)), { recursive: true });
    await writeFile(opts.out, JSON.stringify(fullEvidenceGraph ? { ...result, fullEvidenceGraph } : result, null, 2) + "\n");
  }
  process.stdout.write((opts.json ? JSON.stringify(result, null, 2) : formatSummary(result)) + "\n");
}
