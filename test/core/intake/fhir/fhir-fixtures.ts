import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), "../../../fixtures/fhir");
export const FIXTURES = ["stemi", "pneumonia", "dka"] as const;

/** A fresh copy of a synthetic patient's bundle (tests mutate them into malformed ones). */
export function fixtureBundle(name: (typeof FIXTURES)[number]): Record<string, unknown> & { entry: Array<Record<string, unknown> & { resource: Record<string, unknown> }> } {
  return JSON.parse(readFileSync(path.join(DIR, `synthetic-${name}.json`), "utf8"));
}
