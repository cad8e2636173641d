import { createHash } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";
import type { RunnerTask, RunnerTestFile, RunnerTestSuite } from "vitest";

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
  /** Trials that failed or threw (counted in `trials`); absent means none. */
  failed?: number;
}

/**
 * Beside each `<name>.json` of rows: whether every test of the file that wrote it ran and
 * passed, and a hash of those rows, so the report can refuse rows from a failed or partial
 * run, or rows left behind by an earlier one.
 */
export interface ReliabilityRunStatus {
  artefact: string;
  at: string;
  passed: boolean;
  tests: number;
  /** Full names of tests that failed, were skipped or did not finish. */
  notPassed: string[];
  rowsSha256: string;
}

/** Where the artefacts go; MEDMMV_RELIABILITY_DIR moves them (the recorder's own test uses a temp dir). */
export const RELIABILITY_DIR = process.env.MEDMMV_RELIABILITY_DIR
  ? path.resolve(process.env.MEDMMV_RELIABILITY_DIR)
  : fileURLToPath(new URL("../../test-artifacts/reliability/", import.meta.url));

export const statusFileOf = (artefact: string): string => `${artefact}.status.json`;

export const rowsDigest = (text: string): string => createHash("sha256").update(text).digest("hex");

function testsOf(task: RunnerTask, prefix: string[] = []): Array<{ name: string; state: string }> {
  if (task.type === "suite") {
    // The file itself is a suite named by its path: leave it out of the names.
    const names = "filepath" in task ? prefix : [...prefix, task.name];
    return task.tasks.flatMap((t) => testsOf(t, names));
  }
  return [{ name: [...prefix, task.name].join(" > "), state: task.result?.state ?? "not run" }];
}

/**
 * Writes the rows and their run status. Call it from the file's top-level afterAll with the
 * suite vitest passes there (`afterAll(({}, suite) => recordReliability(name, rows, suite))`):
 * by then every test's result is final (vitest insists the first argument is destructured). Without
 * the suite the status says not passed.
 */
export function recordReliability(file: string, rows: ReliabilityRow[], suite?: Readonly<RunnerTestSuite | RunnerTestFile>): void {
  mkdirSync(RELIABILITY_DIR, { recursive: true });
  const text = JSON.stringify(rows, null, 2);
  const tests = suite ? suite.tasks.flatMap((t) => testsOf(t)) : [];
  const notPassed = suite ? tests.filter((t) => t.state !== "pass").map((t) => `${t.name} (${t.state})`) : ["(no suite given to recordReliability: the run's outcome is unknown)"];
  const status: ReliabilityRunStatus = {
    artefact: `${file}.json`,
    at: new Date().toISOString(),
    passed: suite !== undefined && tests.length > 0 && notPassed.length === 0,
    tests: tests.length,
    notPassed,
    rowsSha256: rowsDigest(text),
  };
  writeFileSync(path.join(RELIABILITY_DIR, `${file}.json`), text);
  writeFileSync(path.join(RELIABILITY_DIR, statusFileOf(file)), JSON.stringify(status, null, 2));
}
