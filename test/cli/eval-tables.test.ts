import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useScriptedServers } from "../support/scripted-servers-fixture.js";
import { runEval, type EvalRunOptions } from "../../src/eval/runner.js";
import { readResults, type ResultRecord } from "../../src/eval/results-file.js";
import type { CrossedTable } from "../../src/eval/crossed-table.js";
import { answerByItem, evalScenario, fakeImages, readItems, SAMPLES, type Verdict } from "../eval/eval-fixtures.js";
import { notebookStats, officialSetCorrectness } from "../eval/medxpertqa-official.js";
import { medmmvCli } from "../support/medmmv-cli.js";

const servers = useScriptedServers({ scenario: evalScenario({}) });
const TEXT = path.join(SAMPLES, "medxpertqa_text.jsonl");
const MM = path.join(SAMPLES, "medxpertqa_mm.jsonl");
let tmp: string;
let textDir: string;
let mmDir: string;
let mmMedmmvDir: string;

/** Right or wrong by item, and by run for one item, so cells and runs differ. */
const VERDICTS: Record<string, (run: number) => Verdict> = {
  "Text-2393": () => "gold",
  "Text-2099": () => "wrong",
  "Text-1546": () => "gold",
  "Text-94": (n) => (n === 0 ? "gold" : "wrong"),
  "MM-1524": () => "wrong",
  "MM-1556": () => "gold",
  "MM-1905": () => "gold",
  "MM-1980": () => "wrong",
};

async function run(opts: Partial<EvalRunOptions> & Pick<EvalRunOptions, "dataset" | "input" | "out">) {
  return runEval({ concurrency: 2, ...opts }, { config: servers.config({ MEDMMV_LLM_BACKOFF_BASE_MS: "5" }), progress: null });
}

beforeAll(async () => {
  tmp = await mkdtemp(path.join(tmpdir(), "medmmv-tables-"));
  const images = path.join(tmp, "images");
  const names = (await readFile(MM, "utf8")).split("\n").filter(Boolean).flatMap((l) => (JSON.parse(l) as { images: string[] }).images);
  await fakeImages(images, names);
  const items = [...(await readItems("medxpertqa", TEXT)), ...(await readItems("medxpertqa", MM, { imagesDir: images }))];
  servers.model.setScenario(evalScenario({ answerFor: answerByItem(items, (it, visit) => VERDICTS[it.id]!(visit)) }));
  textDir = path.join(tmp, "text-cot");
  mmDir = path.join(tmp, "mm-cot");
  mmMedmmvDir = path.join(tmp, "mm-medmmv");
  await run({ dataset: "medxpertqa", input: TEXT, method: "cot", runs: 2, out: textDir });
  await run({ dataset: "medxpertqa", input: MM, images, method: "cot", runs: 2, out: mmDir });
  await run({ dataset: "medxpertqa", input: MM, images, method: "medmmv", out: mmMedmmvDir });
}, 60_000);
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

const env = () => ({ MEDMMV_LOG_LEVEL: "silent" });

describe("eval report --table medxpertqa TEXT MM", () => {
  it("prints the crossed table whose pooled averages are the official notebook's on the same records", async () => {
    const r = await medmmvCli(["eval", "report", "--table", "medxpertqa", textDir, mmDir, "--json"], env());
    expect(r.code).toBe(0);
    const table = (JSON.parse(r.stdout) as { tables: Array<{ table: CrossedTable }> }).tables[0]!.table;
    // The notebook, over the records in the official output layout: label/prediction lists, correct from set_correctness.
    const records: ResultRecord[] = [...(await readResults(path.join(textDir, "results.jsonl"))).records, ...(await readResults(path.join(mmDir, "results.jsonl"))).records];
    const stats = notebookStats(records.map((x) => ({ id: x.id, question_type: x.strata["question_type"]!, correct: officialSetCorrectness([x.gold.option!], x.prediction ? [x.prediction] : []) })));
    const ours: Record<string, { correct: number; total: number; accuracy: number }> = {};
    for (const [row, cols] of Object.entries(table.cells))
      for (const [col, c] of Object.entries(cols)) {
        const name = row === "All" && col === "All" ? "full" : row === "All" ? col : col === "All" ? row.toLowerCase() : `${row.toLowerCase()}/${col}`;
        ours[name] = { correct: c.correct, total: c.itemRuns, accuracy: c.accuracy! };
      }
    expect(ours).toEqual(stats);
    expect(stats["full"]).toEqual({ correct: 9, total: 16, accuracy: 9 / 16 });
    // n counts items, with the runs beside.
    expect(table.cells["Text"]!["All"]).toMatchObject({ items: 4, runs: 2, itemRuns: 8 });

    const md = await medmmvCli(["eval", "report", "--table", "medxpertqa", textDir, mmDir], env());
    expect(md.stdout).toMatch(/\| split \\ question_type \| Reasoning \| Understanding \| All \|/);
    expect(md.stdout).toMatch(/\| \*\*All\*\* \|.*\| 56\.25 % \(9\/16; n = 8 items × 2 runs\) \|/);
    // --out keeps what was printed, both forms.
    const outDir = path.join(path.dirname(textDir), "table-out");
    const written = await medmmvCli(["eval", "report", "--table", "medxpertqa", textDir, mmDir, "--out", outDir], env());
    expect(written.code).toBe(0);
    expect(await readFile(path.join(outDir, "table.md"), "utf8")).toBe(md.stdout);
    expect(JSON.parse(await readFile(path.join(outDir, "table.json"), "utf8"))).toEqual(JSON.parse(r.stdout));
  });

  it("--by crosses any fields; a field the records lack is refused naming the fields they have", async () => {
    const r = await medmmvCli(["eval", "report", "--by", "body_system,question_type", textDir, mmDir, "--json"], env());
    expect(r.code).toBe(0);
    const table = (JSON.parse(r.stdout) as { tables: Array<{ table: CrossedTable }> }).tables[0]!.table;
    expect(table.rows).toEqual(["Cardiovascular", "Endocrine", "Integumentary", "Nervous", "Respiratory", "Skeletal"]);
    // Text-2099 wrong twice, Text-94 right in one of its two runs.
    expect(table.cells["Cardiovascular"]!["All"]).toMatchObject({ items: 2, itemRuns: 4, correct: 1 });
    const bad = await medmmvCli(["eval", "report", "--by", "body-system", textDir], env());
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--by: "body-system" is not a field.*did you mean body_system\?.*its fields: body_system, medical_task, question_type, subset/);
  });

  it("refuses to pool different methods (unless --pool-different) and a folder with itself", async () => {
    const mixed = await medmmvCli(["eval", "report", "--table", "medxpertqa", textDir, mmMedmmvDir], env());
    expect(mixed.code).toBe(2);
    expect(mixed.stderr).toMatch(/not one method under one configuration.*method differs/);
    const forced = await medmmvCli(["eval", "report", "--table", "medxpertqa", textDir, mmMedmmvDir, "--pool-different"], env());
    expect(forced.code).toBe(0);
    expect(forced.stdout).toMatch(/Pooled although they differ \(--pool-different\): method differs/);
    const twice = await medmmvCli(["eval", "report", "--by", "question_type", mmDir, mmDir], env());
    expect(twice.stderr).toMatch(/both hold item MM-\d+, run \d: pooling them would count it twice/);
  });
});

/** RFC 4180, as pandas.read_csv reads it: quoted fields may hold commas, quotes ("") and line breaks. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') (field += '"'), i++;
      else if (ch === '"') quoted = false;
      else field += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ",") row.push(field), (field = "");
    else if (ch === "\n") row.push(field.replace(/\r$/, "")), rows.push(row), (row = []), (field = "");
    else field += ch;
  }
  if (field !== "" || row.length) row.push(field), rows.push(row);
  return rows;
}

describe("eval export DIR --format csv", () => {
  it("one row per item-run with prediction, gold, correct, status, cost, tokens and strata", async () => {
    const r = await medmmvCli(["eval", "export", textDir, "--format", "csv"], env());
    expect(r.code).toBe(0);
    const [head, ...rows] = parseCsv(r.stdout);
    expect(head).toEqual(expect.arrayContaining(["id", "run", "status", "prediction", "gold", "correct", "cost_usd", "prompt_tokens", "completion_tokens", "strata.body_system", "strata.question_type"]));
    expect(rows).toHaveLength(8);
    expect(rows.every((x) => x.length === head!.length)).toBe(true);
    const col = (name: string) => head!.indexOf(name);
    const { records } = await readResults(path.join(textDir, "results.jsonl"));
    for (const rec of records) {
      const row = rows.find((x) => x[col("id")] === rec.id && x[col("run")] === String(rec.run))!;
      expect(row[col("prediction")]).toBe(rec.prediction ?? "");
      expect(row[col("correct")]).toBe(String(rec.correct));
      expect(row[col("gold")]).toBe(rec.gold.option);
      expect(row[col("strata.body_system")]).toBe(rec.strata["body_system"]);
    }
    const parquet = await medmmvCli(["eval", "export", textDir, "--format", "parquet"], env());
    expect(parquet.code).toBe(2);
    expect(parquet.stderr).toMatch(/parquet is not supported/);
  });
});
