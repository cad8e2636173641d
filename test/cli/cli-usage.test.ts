import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildSummary } from "../../src/eval/report.js";
import { type EvalSummary } from "../../src/eval/summary.js";
import { resultRecord, runManifest } from "../eval/eval-fixtures.js";
import { medmmvCli } from "../support/medmmv-cli.js";

/**
 * The CLI's argument contract through the real binary: each command's own options work
 * after its name (even where the parent command has an option of the same name), and
 * every usage error exits 2 with a message naming what to fix.
 */
let tmp: string;
let env: Record<string, string>;
let runA: string;
let runB: string;

beforeAll(async () => {
  tmp = await mkdtemp(path.join(tmpdir(), "medmmv-cli-usage-"));
  env = { MEDMMV_DATA_DIR: path.join(tmp, "data") };
  // Two finished runs: 3 of 4 right, and 1 of 4 right.
  const write = async (name: string, right: number) => {
    const dir = path.join(tmp, name);
    await mkdir(dir, { recursive: true });
    const records = [0, 1, 2, 3].map((i) => resultRecord(`MM-${i}`, 0, "completed", { correct: i < right }));
    await writeFile(path.join(dir, "summary.json"), JSON.stringify(buildSummary(records, runManifest("cot", name), { planned: 4, complete: true })));
    return dir;
  };
  runA = await write("run-a", 3);
  runB = await write("run-b", 1);
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe("medmmv CLI options and usage errors", () => {
  it("eval report DIR… --json prints the summaries as JSON, keyed by folder (the parent eval's --json does not take it)", async () => {
    const r = await medmmvCli(["eval", "report", runA, runB, "--json"], env);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const parsed = JSON.parse(r.stdout) as Record<string, EvalSummary>;
    expect(Object.keys(parsed)).toEqual(["run-a", "run-b"]);
    expect(parsed["run-a"]!.accuracy).toBeCloseTo(0.75);
    expect(parsed["run-b"]!.accuracy).toBeCloseTo(0.25);
  });

  it("eval report without --json prints the Markdown comparison", async () => {
    const r = await medmmvCli(["eval", "report", runA, runB], env);
    expect(r.code).toBe(0);
    expect(() => JSON.parse(r.stdout)).toThrow();
    expect(r.stdout).toMatch(/^\|.*run-a.*\|/m);
  });

  it.each([
    ["eval --order x", ["eval", "--order", "x"], /option '--order <orders>' argument 'x' is invalid/],
    ["eval --replace x", ["eval", "--replace", "x"], /option '--replace <settings>' argument 'x' is invalid/],
    ["eval --method tot", ["eval", "--method", "tot"], /option '--method <m>' argument 'tot' is invalid/],
    ["diagnose --k 0", ["diagnose", "case.json", "--k", "0"], /option '--k <n>' argument '0' is invalid. expected an integer from 1 to 32/],
    ["corpus search without a query", ["corpus", "search"], /missing required argument 'query'/],
    ["report without --out", ["report", "result.json"], /required option '-o, --out <file>' not specified/],
    ["an unknown option", ["eval", "report", runA, "--jsn"], /unknown option '--jsn'/],
    ["an unknown command", ["diagnos"], /unknown command 'diagnos'/],
    ["eval --where without a value", ["eval", "--dataset", "medqa", "--input", "x.jsonl", "--out", "o", "--where", "body_system"], /--where "body_system": expected field=value\[,value…\], e\.g\. body_system=Cardiovascular/],
    ["eval export --format parquet", ["eval", "export", runA, "--format", "parquet"], /--format parquet is not supported/],
    ["eval report --table of an unknown layout", ["eval", "report", "--table", "mmlu", runA], /argument 'mmlu' is invalid\. Allowed choices are medxpertqa/],
    ["eval --workers 0", ["eval", "--dataset", "medqa", "--input", "x.jsonl", "--out", "o", "--workers", "0"], /option '--workers <n>' argument '0' is invalid. expected an integer from 1 to 64/],
    // A conversation eval takes none of the probe, judge, stage-wise, rater or sampling flags; --order only it takes.
    ...(
      [
        // --hypothesis applies to conversations too (turn by turn); option order does not.
        ["--shuffle-options", "2"],
        ["--stage-judge"],
        ["--raters", "m1"],
        ["--traces", "t.jsonl"],
        ["--trace-format", "text"],
        ["--replace", "none"],
        ["--trace-retries", "1"],
        ["--sample", "5"],
        ["--stratify", "order"],
        ["--field-map", "{}"],
        // Conversations run in one process: the conversation runner has no item processes.
        ["--workers", "2"],
      ] as string[][]
    ).map((flag): [string, string[], RegExp] => [`eval --dataset drllava ${flag[0]}`, ["eval", "--dataset", "drllava", "--input", "x.json", "--out", "o", ...flag], new RegExp(`${flag[0]} does not apply to --dataset drllava`)]),
    ["eval --dataset medqa --order si", ["eval", "--dataset", "medqa", "--input", "x.jsonl", "--out", "o", "--order", "si"], /--order applies to --dataset drllava\|conversation only/],
  ])("%s exits 2 and names the flag", async (_name, args, message) => {
    const r = await medmmvCli(args, env);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stdout).toBe("");
  });

  it("a usage error prints its message and a pointer to --help, not the whole help", async () => {
    const r = await medmmvCli(["eval", "--dataset", "medqa", "--input", "x.jsonl", "--out", "o", "--runs", "0"], env);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/option '--runs <r>' argument '0' is invalid/);
    expect(r.stderr).toMatch(/--help/);
    expect(r.stderr).not.toMatch(/Options:/);
    expect(r.stderr.split("\n").length).toBeLessThan(5);
  });

  it("--help and --version still exit 0", async () => {
    const help = await medmmvCli(["eval", "report", "--help"], env);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("--json");
    const version = await medmmvCli(["--version"], env);
    expect(version.code).toBe(0);
    expect(version.stdout).toMatch(/^\d+\.\d+\.\d+/);
  });
});
