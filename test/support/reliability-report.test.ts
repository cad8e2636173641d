import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ReliabilityRow, ReliabilityRunStatus } from "./reliability-recorder.js";

/**
 * Reports only from what passed: a trial suite (test/support/fixtures/trials.fixture.ts, shaped
 * like the kill trials) run in a child vitest, once with a forced failing, a throwing and a
 * timed-out trial, once passing; then `npm run reliability`'s script on what each run left.
 */
const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const bin = (name: string) => path.join(ROOT, "node_modules", ".bin", name);

function run(cmd: string, args: string[], env: Record<string, string>): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { cwd: ROOT, env: { ...process.env, ...env }, timeout: 120_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === "number" ? err.code : 1) : 0;
      resolve({ code, output: `${stdout}${stderr}` });
    });
  });
}

const runFixture = (dir: string, forceFail: boolean) =>
  run(bin("vitest"), ["run", "--config", "test/support/fixtures/vitest.fixture.config.ts"], { MEDMMV_RELIABILITY_DIR: dir, FIXTURE_FORCE_FAIL: forceFail ? "1" : "0" });
const report = (dir: string) => run(bin("tsx"), ["test/support/reliability-report.ts", "--dir", dir, "--out", path.join(dir, "RELIABILITY.md")], {});
const readJson = async <T>(file: string): Promise<T> => JSON.parse(await readFile(file, "utf8")) as T;

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "medmmv-reliability-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("reliability artefacts and report", () => {
  it("a forced failing trial, a throwing one and one that times out are recorded as failed, and the report refuses the run", async () => {
    const suite = await runFixture(dir, true);
    expect(suite.code, suite.output).not.toBe(0);
    const [row] = await readJson<ReliabilityRow[]>(path.join(dir, "fixture-trials.json"));
    expect(row).toMatchObject({ trials: 4, failed: 3, itemsLost: 7 });
    expect(row!.outcome).toContain("1 of 4 trials passed");
    expect(row!.outcome).toContain("5 of 12 cases terminal once");
    expect(row!.outcome).toContain("trial 3 (timed out waiting for 3 cases to finish)");
    // Recorded when vitest reported the timeout, although its body never settled.
    expect(row!.outcome).toContain("trial 4 (Test timed out in");
    const status = await readJson<ReliabilityRunStatus>(path.join(dir, "fixture-trials.status.json"));
    expect(status.passed).toBe(false);
    expect(status.tests).toBe(4);
    expect(status.notPassed).toEqual(["fixture trials > trial 2 (fail)", "fixture trials > trial 3 (fail)", "fixture trials > trial 4 (fail)"]);

    const r = await report(dir);
    expect(r.code).toBe(1);
    expect(r.output).toContain("fixture-trials.json: its run did not pass");
    expect(existsSync(path.join(dir, "RELIABILITY.md"))).toBe(false);
  });

  it("a passing run is written; rows that are not the ones its status describes are refused", async () => {
    const suite = await runFixture(dir, false);
    expect(suite.code, suite.output).toBe(0);
    const status = await readJson<ReliabilityRunStatus>(path.join(dir, "fixture-trials.status.json"));
    expect(status).toMatchObject({ passed: true, tests: 4, notPassed: [] });
    const r = await report(dir);
    expect(r.code, r.output).toBe(0);
    const md = await readFile(path.join(dir, "RELIABILITY.md"), "utf8");
    expect(md).toContain("| four trials of three cases | 4 | 4 of 4 trials passed; 12 of 12 cases terminal once | 0 |");
    await rm(path.join(dir, "RELIABILITY.md"));

    // Rows edited (or left by another run) after the status was written.
    const rowsFile = path.join(dir, "fixture-trials.json");
    const rows = await readJson<ReliabilityRow[]>(rowsFile);
    await writeFile(rowsFile, JSON.stringify([{ ...rows[0]!, itemsLost: 0, outcome: "all good" }], null, 2) + " ");
    const tampered = await report(dir);
    expect(tampered.code).toBe(1);
    expect(tampered.output).toContain("fixture-trials.json: not the rows fixture-trials.status.json describes");

    // Rows with no status beside them.
    await rm(path.join(dir, "fixture-trials.status.json"));
    const bare = await report(dir);
    expect(bare.code).toBe(1);
    expect(bare.output).toContain("fixture-trials.json: no readable fixture-trials.status.json");
    expect(existsSync(path.join(dir, "RELIABILITY.md"))).toBe(false);
  });
});
