import { mkdirSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";

/**
 * Fault and abuse suites record one row per scenario here; `npm run reliability` turns the
 * rows into RELIABILITY.md, so the table is produced by the code that ran the trials.
 */
export interface ReliabilityRow {
  suite: string;
  scenario: string;
  trials: number;
  outcome: string;
  itemsLost: number;
}

export const RELIABILITY_DIR = fileURLToPath(new URL("../../test-artifacts/reliability/", import.meta.url));

export function recordReliability(file: string, rows: ReliabilityRow[]): void {
  mkdirSync(RELIABILITY_DIR, { recursive: true });
  writeFileSync(path.join(RELIABILITY_DIR, `${file}.json`), JSON.stringify(rows, null, 2));
}
