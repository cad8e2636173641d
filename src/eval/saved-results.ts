import { createHash } from "node:crypto";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { writeJsonAtomic } from "./manifest.js";
import type { SavedDiagnosis } from "./methods/types.js";

/** Where `--save-results` writes each item's whole result, inside the run folder. */
export const SAVED_RESULTS_DIR = "results";

/**
 * The file of one (item, run): dataset ids can hold any character (slashes, `#p1` of a
 * permuted copy), so the name keeps the safe part of the id for a reader and a hash of the
 * whole id for uniqueness.
 */
export function savedResultFile(id: string, run: number): string {
  const readable = id.replace(/[^A-Za-z0-9._-]+/g, "_").slice(0, 80);
  const digest = createHash("sha256").update(id).digest("hex").slice(0, 12);
  return path.posix.join(SAVED_RESULTS_DIR, `${readable}-${digest}.r${run}.json`);
}

/**
 * Writes the item's result and full graph in the shape `medmmv report` reads (a
 * DiagnosisResult with `fullEvidenceGraph` beside its fields, as `diagnose --out` writes it),
 * atomically; returns the path relative to the run folder, for the record.
 */
export async function saveDiagnosis(runDir: string, id: string, run: number, saved: SavedDiagnosis): Promise<string> {
  const rel = savedResultFile(id, run);
  await mkdir(path.join(runDir, SAVED_RESULTS_DIR), { recursive: true });
  await writeJsonAtomic(path.join(runDir, rel), { ...saved.result, fullEvidenceGraph: saved.fullEvidenceGraph });
  return rel;
}
