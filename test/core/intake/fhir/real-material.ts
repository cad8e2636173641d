import { readFileSync } from "node:fs";
import path from "node:path";

/** The public FHIR material in test/fixtures/fhir/real (source, commit and licence in its README). */
export const REAL_DIR = path.resolve(import.meta.dirname, "../../../fixtures/fhir/real");

export type Json = Record<string, unknown> & { entry: Array<Record<string, unknown> & { resource: Record<string, unknown> & { resourceType: string } }> };

/** A fresh copy of one file (tests may change it). */
export function realBundle(file: string): Json {
  return JSON.parse(readFileSync(path.join(REAL_DIR, file), "utf8")) as Json;
}
