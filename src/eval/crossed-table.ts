import path from "node:path";
import { canonicalJson } from "../core/contracts/canonical-json.js";
import { MedmmvError } from "../core/contracts/errors.js";
import { readManifest, type RunManifest } from "./manifest.js";
import { readResults, recordKey, RESULTS_FILE, type ResultRecord } from "./results-file.js";
import { assertKnownFields, fieldNames, NO_VALUE } from "./sampling.js";

/** One cell of a crossed table: accuracy over its item-runs (failed and abstained count as wrong), with the items and runs it holds. */
export interface CrossCell {
  /** Distinct items. */
  items: number;
  /** (item, run) records: what the accuracy divides by. */
  itemRuns: number;
  runs: number;
  correct: number;
  accuracy: number | null;
}

export interface CrossedTable {
  /** The fields crossed: rows by all but the last, columns by the last. */
  by: string[];
  rows: string[];
  columns: string[];
  /** rows × columns, with "All" row and column pooling everything in that row or column. */
  cells: Record<string, Record<string, CrossCell>>;
}

export const ALL = "All";

export function crossCell(records: readonly ResultRecord[]): CrossCell {
  const correct = records.filter((r) => r.correct).length;
  return {
    items: new Set(records.map((r) => r.id)).size,
    itemRuns: records.length,
    runs: new Set(records.map((r) => r.run)).size,
    correct,
    accuracy: records.length ? correct / records.length : null,
  };
}

type Value = (r: ResultRecord) => string;

/** Rows by the first fields, columns by the last, each with an "All" that pools the others (as the leaderboards' averages do: over item-runs, not a mean of cells). */
function cross(records: readonly ResultRecord[], rowOf: Value, colOf: Value, order?: { rows?: string[]; columns?: string[] }): Pick<CrossedTable, "rows" | "columns" | "cells"> {
  const sortBy = (values: Set<string>, preferred?: string[]) => [...(preferred ?? []).filter((v) => values.has(v)), ...[...values].filter((v) => !preferred?.includes(v)).sort()];
  const rows = sortBy(new Set(records.map(rowOf)), order?.rows);
  const columns = sortBy(new Set(records.map(colOf)), order?.columns);
  const cells: CrossedTable["cells"] = {};
  for (const row of [...rows, ALL]) {
    cells[row] = {};
    const inRow = row === ALL ? records : records.filter((r) => rowOf(r) === row);
    for (const col of [...columns, ALL]) cells[row]![col] = crossCell(col === ALL ? inRow : inRow.filter((r) => colOf(r) === col));
  }
  return { rows, columns, cells };
}

const field = (name: string): Value => (r) => r.strata[name] ?? NO_VALUE;

/** `--by f1,f2,…`: a crossed breakdown over the records' fields (their strata); unknown fields are refused, naming the fields there are. */
export function crossedBreakdown(records: readonly ResultRecord[], by: readonly string[]): CrossedTable {
  if (by.length === 0) throw new MedmmvError("INVALID_INPUT", "--by needs at least one field");
  assertKnownFields(fieldNames(records), by, "--by");
  const rowFields = by.length === 1 ? [] : by.slice(0, -1);
  const rowOf: Value = rowFields.length === 0 ? () => ALL : (r) => rowFields.map((f) => field(f)(r)).join(" / ");
  const t = cross(records, rowOf, field(by.at(-1)!));
  // One field: the single "All" row is the table.
  return { by: [...by], ...(rowFields.length === 0 ? { ...t, rows: [] } : t) };
}

/**
 * MedXpertQA's leaderboard table: Text and MM (the split, from the id prefix as the official
 * notebook reads it), each by question type (Reasoning / Understanding), with the pooled
 * averages the notebook prints — per split, per type over both splits, and over everything,
 * each correct / total over the records in it.
 */
export function medxpertqaTable(records: readonly ResultRecord[]): CrossedTable {
  const splitOf: Value = (r) => (r.id.toLowerCase().startsWith("text") ? "Text" : r.id.toLowerCase().startsWith("mm") ? "MM" : NO_VALUE);
  const unknown = records.filter((r) => splitOf(r) === NO_VALUE || r.strata["question_type"] === undefined);
  if (unknown.length) throw new MedmmvError("INVALID_INPUT", `--table medxpertqa: ${unknown.length} records are not MedXpertQA items (an id starting Text- or MM- and a question_type), e.g. ${unknown[0]!.id}`);
  return { by: ["split", "question_type"], ...cross(records, splitOf, field("question_type"), { rows: ["Text", "MM"], columns: ["Reasoning", "Understanding"] }) };
}

const pct = (x: number | null) => (x === null ? "–" : `${(100 * x).toFixed(2)} %`);

function cellText(c: CrossCell): string {
  if (c.itemRuns === 0) return "–";
  return `${pct(c.accuracy)} (${c.correct}/${c.itemRuns}; n = ${c.items} items${c.runs > 1 ? ` × ${c.runs} runs` : ""})`;
}

export function crossedTableMarkdown(t: CrossedTable, title: string): string {
  const rows = t.rows.length ? [...t.rows, ALL] : [ALL];
  const head = [t.by.length > 1 ? `${t.by.slice(0, -1).join(" / ")} \\ ${t.by.at(-1)}` : t.by[0]!, ...t.columns, ALL];
  const lines = [`### ${title}`, "", `| ${head.join(" | ")} |`, `|${head.map(() => "---").join("|")}|`];
  for (const row of rows) lines.push(`| ${row === ALL ? "**All**" : row} | ${[...t.columns, ALL].map((c) => cellText(t.cells[row]![c]!)).join(" | ")} |`);
  lines.push("", "Each cell: accuracy = correct / item-runs (failed and abstained count as wrong); All pools the records of its row or column (not a mean of cells); n counts items, × runs where there are several.");
  return lines.join("\n");
}

/** The manifest fields that make two folders the same method and configuration (what their inputs and selections may not change). */
const SAME_METHOD: Array<keyof RunManifest> = ["method", "label", "config", "models", "raters", "prompts"];

export interface PooledFolders {
  records: ResultRecord[];
  manifests: RunManifest[];
  /** Differences allowed by `allowDifferent`, for the report to state. */
  differences: string[];
}

/**
 * `eval report A B …` with --table or --by: the folders' records pooled into one table. They
 * must be one method under one configuration (Text and MM runs of it, say): folders that
 * differ are refused unless `allowDifferent`, and an (item, run) held by two folders is
 * refused always (it would count twice).
 */
export async function poolFolders(dirs: readonly string[], o: { allowDifferent?: boolean } = {}): Promise<PooledFolders> {
  const manifests: RunManifest[] = [];
  const records: ResultRecord[] = [];
  const owner = new Map<string, string>();
  for (const dir of dirs) {
    const m = await readManifest(dir);
    if (!m) throw new MedmmvError("NOT_FOUND", `${dir} is not an eval folder (no eval.json)`);
    manifests.push(m);
    for (const r of (await readResults(path.join(dir, RESULTS_FILE))).records) {
      const key = recordKey(r.id, r.run);
      const prev = owner.get(key);
      if (prev) throw new MedmmvError("CONFLICT", `${prev} and ${dir} both hold item ${r.id}, run ${r.run}: pooling them would count it twice`);
      owner.set(key, dir);
      records.push(r);
    }
  }
  const differences: string[] = [];
  for (let i = 1; i < manifests.length; i++)
    for (const f of SAME_METHOD)
      if (canonicalJson(manifests[0]![f] ?? null) !== canonicalJson(manifests[i]![f] ?? null)) differences.push(`${f} differs between ${dirs[0]} and ${dirs[i]}`);
  if (differences.length && !o.allowDifferent)
    throw new MedmmvError("CONFLICT", `these folders are not one method under one configuration, so one table would mix them: ${differences.join("; ")}. Compare them with \`eval report\` without --table/--by, or pass --pool-different to pool them anyway`);
  return { records, manifests, differences };
}
