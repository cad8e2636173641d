import path from "node:path";
import type { Config } from "../core/config.js";
import { MedmmvError } from "../core/contracts/errors.js";
import { createSearchProvider } from "../core/search/create-search-provider.js";
import { inputChange, manifestConflicts, MANIFEST_FILE, readManifest, writeJsonAtomic, type RunManifest } from "./manifest.js";
import { readResults, RESULTS_FILE, type ReadResults } from "./results-file.js";

/** The manifest fields that say where a run's items come from (shared by every kind of eval). */
export function manifestSource(o: { dataset: RunManifest["dataset"]; input: string; images?: string; missingImages?: "error" | "text-only" }): Pick<RunManifest, "schema" | "dataset" | "input" | "images" | "missingImages"> {
  return { schema: "medmmv-eval-run/1", dataset: o.dataset, input: o.input, images: o.images ? path.resolve(o.images) : null, missingImages: o.missingImages ?? "error" };
}

/**
 * A manifest written before the eval recorded the search provider that ran
 * (`config.searchProvider`) has `config.search`: the MEDMMV_SEARCH setting, "none" for the
 * default even where that found a SQLite corpus. Those sessions ran createSearchProvider(config),
 * so under the same setting that is what they ran; a different setting is a different run.
 */
export function withSearchProviderRan(previous: RunManifest, config: Config): RunManifest {
  const { search, ...rest } = previous.config;
  if (search === undefined || "searchProvider" in rest) return previous;
  const ran = search === config.search.provider ? createSearchProvider(config).name : search;
  return { ...previous, config: { ...rest, searchProvider: ran } };
}

/**
 * Take an --out folder for a run: a folder that already holds results needs --resume, and
 * --resume needs the configuration those results were produced with (so two runs' records
 * are never mixed). Writes DIR/eval.json (keeping the first session's createdAt) and returns
 * what results.jsonl holds so far.
 */
export async function claimRunFolder(dir: string, manifest: RunManifest, resume: boolean | undefined, config: Config): Promise<ReadResults> {
  const existing = await readResults(path.join(dir, RESULTS_FILE));
  const stored = await readManifest(dir);
  const previous = stored && withSearchProviderRan(stored, config);
  const hasResults = existing.lines > 0 || existing.tornTail;
  if (hasResults && !resume)
    throw new MedmmvError("CONFLICT", `${dir} already holds results (${itemRunCount(existing)}); pass --resume to continue that run, or choose another --out`);
  if (resume && previous) {
    const conflicts = manifestConflicts(previous, manifest);
    if (conflicts.length)
      throw new MedmmvError("CONFLICT", `--resume: ${dir} was produced with a different configuration, so its results cannot be mixed with this run's: ${conflicts.join("; ")}`);
    // The same settings and file name, other bytes: the file was edited or replaced since.
    const changed = inputChange(previous, manifest);
    if (changed) throw new MedmmvError("CONFLICT", `--resume: ${changed}; its results cannot be mixed with this file's items (use another --out, or the original file)`);
    manifest.createdAt = previous.createdAt;
    // The first session's product stays the folder's; a session on other code is added, never written over it.
    keepProductHistory(previous, manifest);
  } else if (resume && hasResults) {
    throw new MedmmvError("CONFLICT", `--resume: ${dir} has results but no ${MANIFEST_FILE}, so its configuration is unknown; use another --out`);
  }
  await writeJsonAtomic(path.join(dir, MANIFEST_FILE), manifest);
  return existing;
}

function keepProductHistory(previous: RunManifest, manifest: RunManifest): void {
  const now = manifest.product;
  const history = [...(previous.resumedWith ?? [])];
  if (previous.product === undefined) return; // an older folder: the product that ran first is unknown
  manifest.product = previous.product;
  const known = [previous.product, ...history].some((p) => p.sourceHash === now?.sourceHash);
  if (now && !known) history.push(now);
  if (history.length) manifest.resumedWith = history;
}

/** "3 items × 2 runs = 6 item-runs": a folder's records counted as what they are. */
export function itemRunCount(r: Pick<ReadResults, "records">): string {
  const items = new Set(r.records.map((x) => x.id)).size;
  const runs = new Set(r.records.map((x) => x.run)).size;
  return `${items} item${items === 1 ? "" : "s"} × ${runs} run${runs === 1 ? "" : "s"} = ${r.records.length} item-run${r.records.length === 1 ? "" : "s"}`;
}
